"""Control batches: the commit and abort markers that end a transaction in a partition.

A marker is a v2 batch with the control and transactional attribute bits, the producer's
id and epoch, no sequence, and one record whose key is ``version int16 (0), type int16``
(0 abort, 1 commit) and whose value is ``version int16 (0), coordinator epoch int32``.
Markers are never compressed. The transaction coordinator writes them; consumers skip
them, and read_committed consumers use abort markers to stop dropping a producer's data.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from kafkalite.protocol.varint import decode_varint
from kafkalite.records.batch_header import (
    CONTROL_BIT,
    V2_ATTRIBUTES_POSITION,
    V2_CRC_POSITION,
    V2_CRC_START,
    V2_HEADER_SIZE,
)
from kafkalite.records.builder import RecordBatchBuilder

ABORT = 0
COMMIT = 1
CONTROL_KEY = struct.Struct(">hh")
CONTROL_VALUE = struct.Struct(">hi")
_ATTRIBUTES = struct.Struct(">h")
_CRC = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class Marker:
    commit: bool
    coordinator_epoch: int


def encode_marker(producer_id: int, producer_epoch: int, coordinator_epoch: int,
                  commit: bool, timestamp_ms: int) -> bytes:
    """One control batch at base offset 0 (the log assigns the real one)."""
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch,
                                 is_transactional=True)
    builder.append(timestamp_ms, CONTROL_KEY.pack(0, COMMIT if commit else ABORT),
                   CONTROL_VALUE.pack(0, coordinator_epoch))
    batch = bytearray(builder.build())
    (attributes,) = _ATTRIBUTES.unpack_from(batch, V2_ATTRIBUTES_POSITION)
    _ATTRIBUTES.pack_into(batch, V2_ATTRIBUTES_POSITION, attributes | CONTROL_BIT)
    _CRC.pack_into(batch, V2_CRC_POSITION, crc32c.crc32c(memoryview(batch)[V2_CRC_START:]))
    return bytes(batch)


def read_marker(buf: bytes | bytearray | memoryview, position: int = 0) -> Marker | None:
    """The marker of the control batch at ``position`` of ``buf``; None when its record is
    not a commit or abort marker (unknown control types are skipped)."""
    start = position + V2_HEADER_SIZE
    view = memoryview(buf)
    _length, pos = decode_varint(view, start)
    pos += 1  # attributes
    _timestamp_delta, pos = decode_varint(view, pos)
    _offset_delta, pos = decode_varint(view, pos)
    key_length, pos = decode_varint(view, pos)
    if key_length < CONTROL_KEY.size:
        return None
    _version, kind = CONTROL_KEY.unpack_from(view, pos)
    pos += key_length
    if kind not in (ABORT, COMMIT):
        return None
    value_length, pos = decode_varint(view, pos)
    coordinator_epoch = -1
    if value_length >= CONTROL_VALUE.size:
        _version, coordinator_epoch = CONTROL_VALUE.unpack_from(view, pos)
    return Marker(kind == COMMIT, coordinator_epoch)
