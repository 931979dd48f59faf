"""Producer-state snapshots: ``<offset>.snapshot`` files in Kafka's format.

A snapshot holds the producer table as it was when the log ended at ``offset``: per
producer its epoch, its last batch (last sequence, last offset, offset delta, max
timestamp), the epoch of the last coordinator that ended one of its transactions, and the
first offset of its open transaction. Loading a partition reads the newest snapshot at or
below the log end and replays only the batches after it, so recovery time is bounded by
one segment instead of the whole log (snapshots are taken at each roll and at shutdown).

Format (ProducerSnapshot v1): ``version int16 = 1``, ``crc uint32`` (CRC-32C of every
byte after it), ``count int32`` then per entry ``producer id int64, epoch int16, last
sequence int32, last offset int64, offset delta int32, timestamp int64, coordinator epoch
int32, current txn first offset int64``. A file that fails its CRC or length is ignored
(the loader falls back to an older snapshot or a full replay).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import crc32c

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
SNAPSHOTS_KEPT = 2
"""Snapshots kept besides the newest at shutdown: enough to reload after a short cut."""


class CorruptSnapshotError(Exception):
    """The snapshot's version, length or CRC is wrong."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = _COUNT.pack(len(entries)) + b"".join(
        _ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta,
                    e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        for e in entries)
    return _HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + body


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    if len(data) < _HEADER.size + _COUNT.size:
        raise CorruptSnapshotError(f"{len(data)} bytes is too short for a snapshot")
    version, crc = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"snapshot version {version}, expected {SNAPSHOT_VERSION}")
    body = memoryview(data)[_HEADER.size:]
    if crc32c.crc32c(body) != crc:
        raise CorruptSnapshotError("snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body)
    if count < 0 or len(body) != _COUNT.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"snapshot of {len(body)} bytes cannot hold {count} entries")
    return [SnapshotEntry(*fields)
            for fields in _ENTRY.iter_unpack(body[_COUNT.size:])]


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


def snapshot_offsets(directory: Path) -> list[int]:
    """Offsets of the snapshot files present, ascending."""
    offsets = []
    for path in directory.glob(f"*{SNAPSHOT_SUFFIX}"):
        stem = path.name[:-len(SNAPSHOT_SUFFIX)]
        if stem.isdigit():
            offsets.append(int(stem))
    return sorted(offsets)


def delete_snapshots(directory: Path, *, below: int | None = None,
                     above: int | None = None) -> None:
    """Remove snapshots with offsets below ``below`` or above ``above``."""
    for offset in snapshot_offsets(directory):
        if (below is not None and offset < below) or (above is not None and offset > above):
            snapshot_path(directory, offset).unlink(missing_ok=True)
