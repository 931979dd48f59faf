"""Record batches built by kafka-python (an independent encoder) for the log tests."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords


def v2_batch(count: int = 1, *, timestamp: int = 1_000, value_size: int = 10,
             compression: int = 0, producer_id: int = -1, producer_epoch: int = -1,
             base_sequence: int = -1, timestamps: list[int] | None = None) -> bytearray:
    """One magic-2 batch of ``count`` records (offsets 0..count-1, as a producer sends)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
        batch_size=1 << 24)
    for i in range(count):
        ts = timestamps[i] if timestamps is not None else timestamp + i
        builder.append(i, timestamp=ts, key=b"key-%d" % i,
                       value=bytes([65 + i % 26]) * value_size, headers=[("h", b"v")])
    return bytearray(builder.build())


def legacy_messages(count: int = 1, *, magic: int = 1, compression: int = 0,
                    timestamp: int = 1_000) -> bytearray:
    """A legacy message set: ``count`` messages, or one wrapper holding them."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression,
                                       batch_size=1 << 24)
    for i in range(count):
        builder.append(i, timestamp=timestamp + i if magic else None, key=None,
                       value=b"legacy-%d" % i)
    return bytearray(builder.build())


def decode_offsets(data: bytes) -> list[int]:
    """Record offsets in fetched bytes, decoded by kafka-python (CRC checked)."""
    records = MemoryRecords(data)
    offsets = []
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        offsets.extend(record.offset for record in batch)
    return offsets
