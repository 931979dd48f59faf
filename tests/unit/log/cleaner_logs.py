"""Keyed logs for the cleaner tests: batches built and read back by kafka-python (an
independent encoder and decoder, CRCs checked), and a fake clock."""

from __future__ import annotations

from pathlib import Path

from fake_clock import FakeClock as Clock
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log

Write = tuple[bytes, bytes | None]
"""(key, value); value None is a tombstone."""


def keyed_batch(writes: list[Write], *, timestamp: int = 1_000, compression: int = 0,
                producer_id: int = -1, producer_epoch: int = -1,
                base_sequence: int = -1) -> bytearray:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
        batch_size=1 << 24)
    for i, (key, value) in enumerate(writes):
        builder.append(i, timestamp=timestamp + i, key=key, value=value,
                       headers=[("n", str(i).encode())])
    return bytearray(builder.build())


def compacted_log(directory: Path, clock: Clock, **config: object) -> Log:
    settings: dict[str, object] = {"cleanup_policy": "compact", "file_delete_delay_ms": 0,
                                   **config}
    return Log.open(directory, LogConfig(**settings), now_ms=clock)  # type: ignore[arg-type]


def read_records(log: Log) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """(offset, key, value, timestamp) of every record on disk, oldest first."""
    records = []
    for segment in log.segments:
        data = segment.read_bytes(0, segment.size)
        batches = MemoryRecords(data)
        while (batch := batches.next_batch()) is not None:
            assert batch.validate_crc()
            records.extend((r.offset, r.key, r.value, r.timestamp) for r in batch)
    return records


def consume_from(log: Log, offset: int) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """What a consumer positioned at ``offset`` reads: Fetch-sized reads through
    :meth:`Log.read` up to the log end, each continuing after the last batch it got, and
    only the records at or after ``offset`` (a fetch returns the whole batch holding it)."""
    records = []
    position = offset
    for _ in range(10_000):
        region = log.read(position, 1024, max_offset=log.log_end_offset)
        if region is None:
            return [record for record in records if record[0] >= offset]
        batches = MemoryRecords(region.read_bytes())
        while (batch := batches.next_batch()) is not None:
            records.extend((r.offset, r.key, r.value, r.timestamp) for r in batch)
            position = batch.base_offset + batch.last_offset_delta + 1
    raise AssertionError("the reads made no progress")


def read_batches(log: Log) -> list[object]:
    """kafka-python's view of every batch (producer id, sequence, record count...)."""
    found = []
    for segment in log.segments:
        batches = MemoryRecords(segment.read_bytes(0, segment.size))
        while (batch := batches.next_batch()) is not None:
            found.append(batch)
    return found
