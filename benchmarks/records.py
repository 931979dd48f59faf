"""Record encode/decode throughput: kafkalite against kafka-python, in the same run.

Encodes N records (null key, 100-byte value, one header-less record per append) into
16 KB RecordBatch v2 batches with each library's builder, then decodes the resulting
record set with each library's reader, touching every record's value. Uncompressed
and lz4. One line per case: records/s for each library (best of ``--repeat`` interleaved
runs) and the kafkalite/kafka-python ratio.

    python -m benchmarks.records [--records N] [--repeat R]    (from the repository root)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from benchmarks.report import add_write_docs, documented
from kafkalite.records import BatchBuilder, decode_batches

BATCH_SIZE = 16384
VALUE = b"v" * 100
BASE_TIMESTAMP = 1_700_000_000_000


def encode_kafkalite(count: int, compression: str | None) -> list[bytes]:
    batches = []
    builder = BatchBuilder(2, compression, BATCH_SIZE)
    for i in range(count):
        timestamp = BASE_TIMESTAMP + (i >> 4)
        if not builder.append(timestamp, None, VALUE):
            batches.append(builder.build())
            builder = BatchBuilder(2, compression, BATCH_SIZE)
            builder.append(timestamp, None, VALUE)
    batches.append(builder.build())
    return batches


def encode_kafka_python(count: int, compression: str | None) -> list[bytes]:
    codec = 3 if compression == "lz4" else 0

    def new_builder() -> DefaultRecordBatchBuilder:
        return DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                         producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                         batch_size=BATCH_SIZE)

    batches = []
    builder = new_builder()
    offset = 0
    for i in range(count):
        timestamp = BASE_TIMESTAMP + (i >> 4)
        if builder.append(offset, timestamp, None, VALUE, []) is None:
            batches.append(bytes(builder.build()))
            builder = new_builder()
            offset = 0
            builder.append(offset, timestamp, None, VALUE, [])
        offset += 1
    batches.append(bytes(builder.build()))
    return batches


def decode_kafkalite(data: bytes) -> int:
    total = 0
    for record in decode_batches(data):
        total += len(record.value or b"")
    return total


def decode_kafka_python(data: bytes) -> int:
    total = 0
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        if not batch.validate_crc():
            raise RuntimeError("kafka-python saw a CRC mismatch")
        for record in batch:
            total += len(record.value or b"")
    return total


def best_rates(count: int, repeat: int, ours: Callable[[], object],
               theirs: Callable[[], object]) -> tuple[float, float]:
    """Best of ``repeat`` interleaved runs each, so a burst of load on a shared machine
    hits both libraries alike instead of skewing the ratio."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for index, action in enumerate((ours, theirs)):
            start = time.perf_counter()
            action()
            best[index] = min(best[index], time.perf_counter() - start)
    return count / best[0], count / best[1]


def report(case: str, ours: float, theirs: float) -> None:
    print(f"{case:<18} kafkalite {ours:>12,.0f} rec/s   kafka-python {theirs:>12,.0f} rec/s"
          f"   ratio {ours / theirs:5.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; best counts")
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.records", args.write_docs):
        count, repeat = args.records, args.repeat
        for compression in (None, "lz4"):
            name = compression or "uncompressed"
            report(f"encode {name}", *best_rates(
                count, repeat, lambda c=compression: encode_kafkalite(count, c),
                lambda c=compression: encode_kafka_python(count, c)))

            data = b"".join(encode_kafkalite(count, compression))
            peer_data = b"".join(encode_kafka_python(count, compression))
            if decode_kafkalite(peer_data) != decode_kafka_python(data):
                raise RuntimeError("the two libraries disagree about the records")
            report(f"decode {name}", *best_rates(count, repeat, lambda d=data: decode_kafkalite(d),
                                                 lambda d=data: decode_kafka_python(d)))


if __name__ == "__main__":
    main()
