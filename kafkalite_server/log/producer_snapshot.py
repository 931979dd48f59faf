"""Producer-state snapshots: ``<offset>.snapshot`` files.

A snapshot holds the producer table as it was when the log ended at ``offset``: per
producer its epoch, its last five batches (first and last sequence, first and last offset),
its max timestamp, the epoch of the last coordinator that ended one of its transactions, and
the first offset of its open transaction. Loading a partition reads the newest snapshot at
or below the log end and replays only the batches after it, so recovery time is bounded by
one segment instead of the whole log (snapshots are taken at each roll and at shutdown).

Why five batches and not Kafka's one: a producer keeps up to five requests in flight per
partition, and a retry of any of them must be answered as a duplicate with its first
offsets. Kafka's snapshot (version 1) keeps only the last batch, so after a reload from it
(a restart, or a follower's truncation) a retry of an earlier one of the five is refused
with OUT_OF_ORDER_SEQUENCE_NUMBER; librdkafka answers that by bumping its epoch and
re-sending queued records under new sequences, which writes again those the broker had
already appended. Version 2 keeps all five; version 1 files are still read.

Format: ``version int16``, ``crc uint32`` (CRC-32C of every byte after it), ``count int32``
then per entry ``producer id int64, epoch int16, timestamp int64, coordinator epoch int32,
current txn first offset int64, batch count int8`` followed by ``first sequence int32, last
sequence int32, first offset int64, last offset int64`` per batch, oldest first. Version 1
entries are ``producer id int64, epoch int16, last sequence int32, last offset int64, offset
delta int32, timestamp int64, coordinator epoch int32, current txn first offset int64``. A
file that fails its CRC or length is ignored (the loader falls back to an older snapshot or
a full replay).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import crc32c

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 2
_KAFKA_VERSION = 1
_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhqiqb")
_BATCH = struct.Struct(">iiqq")
_KAFKA_ENTRY = struct.Struct(">qhiqiqiq")
_INT32_WRAP = 2**31
"""Sequences wrap from Int32.MAX to 0."""
SNAPSHOTS_KEPT = 2
"""Snapshots kept besides the newest at shutdown: enough to reload after a short cut."""


class CorruptSnapshotError(Exception):
    """The snapshot's version, length or CRC is wrong."""


@dataclass(frozen=True, slots=True)
class SnapshotBatch:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    epoch: int
    batches: tuple[SnapshotBatch, ...]
    """The producer's last batches, oldest first (at most five)."""
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    parts = [_COUNT.pack(len(entries))]
    for e in entries:
        parts.append(_ENTRY.pack(e.producer_id, e.epoch, e.timestamp, e.coordinator_epoch,
                                 e.current_txn_first_offset, len(e.batches)))
        parts.extend(_BATCH.pack(b.first_sequence, b.last_sequence, b.first_offset,
                                 b.last_offset) for b in e.batches)
    body = b"".join(parts)
    return _HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + body


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    if len(data) < _HEADER.size + _COUNT.size:
        raise CorruptSnapshotError(f"{len(data)} bytes is too short for a snapshot")
    version, crc = _HEADER.unpack_from(data)
    if version not in (SNAPSHOT_VERSION, _KAFKA_VERSION):
        raise CorruptSnapshotError(f"snapshot version {version}, expected {SNAPSHOT_VERSION}")
    body = memoryview(data)[_HEADER.size:]
    if crc32c.crc32c(body) != crc:
        raise CorruptSnapshotError("snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body)
    if version == _KAFKA_VERSION:
        return _decode_kafka_entries(body, count)
    entries, position = [], _COUNT.size
    try:
        for _ in range(count):
            producer_id, epoch, timestamp, coordinator_epoch, txn_first, batch_count = (
                _ENTRY.unpack_from(body, position))
            position += _ENTRY.size
            batches = tuple(SnapshotBatch(*_BATCH.unpack_from(body, position + i * _BATCH.size))
                            for i in range(batch_count))
            position += batch_count * _BATCH.size
            entries.append(SnapshotEntry(producer_id, epoch, batches, timestamp,
                                         coordinator_epoch, txn_first))
    except struct.error as exc:
        raise CorruptSnapshotError(f"snapshot of {len(body)} bytes cannot hold {count} "
                                   "entries") from exc
    if count < 0 or position != len(body):
        raise CorruptSnapshotError(f"snapshot of {len(body)} bytes cannot hold {count} entries")
    return entries


def _decode_kafka_entries(body: memoryview, count: int) -> list[SnapshotEntry]:
    """Version 1 (Kafka's): one batch per producer, as last sequence, last offset and the
    offset delta between its first and last record."""
    if count < 0 or len(body) != _COUNT.size + count * _KAFKA_ENTRY.size:
        raise CorruptSnapshotError(f"snapshot of {len(body)} bytes cannot hold {count} entries")
    entries = []
    for (producer_id, epoch, last_sequence, last_offset, offset_delta, timestamp,
         coordinator_epoch, txn_first) in _KAFKA_ENTRY.iter_unpack(body[_COUNT.size:]):
        batches: tuple[SnapshotBatch, ...] = ()
        if last_offset >= 0 and last_sequence >= 0:
            first_sequence = last_sequence - offset_delta
            if first_sequence < 0:
                first_sequence += _INT32_WRAP
            batches = (SnapshotBatch(first_sequence, last_sequence, last_offset - offset_delta,
                                     last_offset),)
        entries.append(SnapshotEntry(producer_id, epoch, batches, timestamp, coordinator_epoch,
                                     txn_first))
    return entries


def write_snapshot(directory: Path, offset: int, entries: list[SnapshotEntry]) -> Path:
    """Write atomically (temp file, fsync, rename): a crash leaves the old set intact."""
    path = snapshot_path(directory, offset)
    temp = path.with_name(path.name + ".tmp")
    with open(temp, "wb") as file:
        file.write(encode_snapshot(entries))
        file.flush()
        os.fsync(file.fileno())
    os.replace(temp, path)
    return path


def snapshot_offsets(directory: Path, names: Iterable[str] | None = None) -> list[int]:
    """Offsets of the snapshot files present, ascending (``names``: the directory's
    entries when the caller has listed it already)."""
    offsets = []
    for name in os.listdir(directory) if names is None else names:
        stem = name[:-len(SNAPSHOT_SUFFIX)]
        if name.endswith(SNAPSHOT_SUFFIX) and stem.isdigit():
            offsets.append(int(stem))
    return sorted(offsets)


def delete_snapshots(directory: Path, *, below: int | None = None,
                     above: int | None = None) -> None:
    """Remove snapshots with offsets below ``below`` or above ``above``."""
    for offset in snapshot_offsets(directory):
        if (below is not None and offset < below) or (above is not None and offset > above):
            snapshot_path(directory, offset).unlink(missing_ok=True)
