"""Log cleaner throughput next to the raw read+write rate of the same data, in one run.

Writes a compacted log of N records (keys drawn from K distinct keys, 100-byte values,
16 records a batch, 1 MiB segments), rolls it, then times two things over the same
segments: copying their bytes to a new file in 512 KiB chunks with an fsync at the end
(the raw rate: what any rewrite of the data costs at least), and one cleaner pass (offset
map, filter, rewrite, swap). Both figures are MB/s of log data read. Uncompressed and
lz4; each case on a fresh log.

    python -m benchmarks.cleaner [--records N] [--keys K]    (from the repository root)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks.report import add_write_docs, documented
from kafkalite.records import BatchBuilder
from kafkalite_server.log.cleaner import IO_BUFFER_SIZE, Cleaner
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log

VALUE = b"v" * 100
PER_BATCH = 16
MB = 1_000_000


def build_log(directory: Path, records: int, keys: int, codec: str | None) -> Log:
    config = LogConfig(segment_bytes=1 << 20, cleanup_policy="compact", file_delete_delay_ms=0)
    log = Log.open(directory, config)
    for start in range(0, records, PER_BATCH):
        builder = BatchBuilder(2, codec, 1 << 20)
        for i in range(start, min(start + PER_BATCH, records)):
            builder.append(1_700_000_000_000 + i, b"key-%d" % ((i * 7919) % keys), VALUE)
        log.append_as_leader(bytearray(builder.build()), leader_epoch=0)
    log.roll()
    return log


def raw_copy_seconds(log: Log, target: Path) -> tuple[int, float]:
    segments, _ = log.cleanable_segments()
    started = time.perf_counter()
    copied = 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for segment in segments:
            position = 0
            while position < segment.size:
                chunk = log.read_for_cleaning(segment, position, IO_BUFFER_SIZE)
                os.pwrite(fd, chunk, copied)
                copied += len(chunk)
                position += len(chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    return copied, time.perf_counter() - started


def run_case(root: Path, records: int, keys: int, codec: str | None) -> str:
    log = build_log(root / f"{codec or 'none'}-0", records, keys, codec)
    size, raw_seconds = raw_copy_seconds(log, root / "raw-copy")
    started = time.perf_counter()
    result = Cleaner(64 << 20).clean(log, 0, log.log_end_offset, int(time.time() * 1000))
    clean_seconds = time.perf_counter() - started
    after = sum(segment.size for segment in log.segments)
    log.close()
    return (f"cleaner {codec or 'none':5} {records} records {keys} keys {size / MB:6.1f} MB: "
            f"cleaner {size / MB / clean_seconds:6.1f} MB/s, raw read+write "
            f"{size / MB / raw_seconds:7.1f} MB/s, {result.stats.records_kept} records "
            f"kept, {after / MB:.2f} MB after")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=10_000)
    add_write_docs(parser)
    args = parser.parse_args()
    with (documented("benchmarks.cleaner", args.write_docs),
          tempfile.TemporaryDirectory(prefix="kafkalite-cleaner-") as tmp):
        for codec in (None, "lz4"):
            print(run_case(Path(tmp), args.records, args.keys, codec), flush=True)


if __name__ == "__main__":
    main()
