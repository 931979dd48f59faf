"""Legacy message sets (magic 0 and 1): one message per entry, or a compressed wrapper.

A wrapper message's value is a compressed message set of inner messages. Its offsets
follow two rules (see the module's readers and :func:`assign_legacy_offsets`):

- magic 1: inner offsets are relative (0..n-1) and the wrapper carries the absolute
  offset of the last inner message, so a broker only restamps the wrapper;
- magic 0: inner offsets are absolute, so a broker decompresses, rewrites them and
  recompresses.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalite.errors import CorruptRecordError
from kafkalite.records.batch_header import COMPRESSION_MASK, LOG_OVERHEAD, TIMESTAMP_TYPE_BIT
from kafkalite.records.compression import NONE, compress, decompress
from kafkalite.records.record import NO_HEADERS, Record

if TYPE_CHECKING:
    from kafkalite.records.reader import RecordBatchView

_PREFIX = struct.Struct(">qiI")  # offset, size, crc
_OFFSET = struct.Struct(">q")
_BODY_V0 = struct.Struct(">bbi")  # magic, attributes, key length
_BODY_V1 = struct.Struct(">bbqi")  # magic, attributes, timestamp, key length
_LENGTH = struct.Struct(">i")
_CRC_START = 16  # the CRC covers magic .. end of value
NO_TIMESTAMP = -1


def encode_message(offset: int, magic: int, attributes: int, timestamp: int,
                   key: bytes | bytearray | memoryview | None,
                   value: bytes | bytearray | memoryview | None) -> bytes:
    """One complete entry: offset, size, CRC-32 and the message body."""
    key_length = -1 if key is None else len(key)
    value_length = -1 if value is None else len(value)
    head = (_BODY_V1.pack(magic, attributes, timestamp, key_length) if magic
            else _BODY_V0.pack(magic, attributes, key_length))
    body = b"".join((head, b"" if key is None else key, _LENGTH.pack(value_length),
                     b"" if value is None else value))
    return _PREFIX.pack(offset, len(body) + 4, zlib.crc32(body)) + body


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """A parsed legacy message and the span of ``data`` it occupies."""

    position: int
    size: int
    offset: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    def crc_is_valid(self, data: bytes) -> bool:
        return zlib.crc32(data[self.position + _CRC_START:self.position + self.size]) == self.crc


def read_message(data: bytes, pos: int) -> LegacyMessage:
    """Parse the complete message at ``pos``; anything malformed or cut short is corrupt."""
    end = len(data)
    if pos + LOG_OVERHEAD + 6 > end:
        raise CorruptRecordError("legacy message is truncated")
    offset, size, crc = _PREFIX.unpack_from(data, pos)
    stop = pos + LOG_OVERHEAD + size
    if size < 0 or stop > end:
        raise CorruptRecordError(f"legacy message size {size} overruns the data", offset)
    magic = data[pos + 16]
    if magic not in (0, 1):
        raise CorruptRecordError(f"legacy message has magic {magic}", offset)
    try:
        if magic == 1:
            _magic, attributes, timestamp, key_length = _BODY_V1.unpack_from(data, pos + 16)
            cursor = pos + 16 + _BODY_V1.size
        else:
            _magic, attributes, key_length = _BODY_V0.unpack_from(data, pos + 16)
            timestamp = NO_TIMESTAMP
            cursor = pos + 16 + _BODY_V0.size
        key, cursor = _read_bytes(data, cursor, key_length, stop, offset)
        (value_length,) = _LENGTH.unpack_from(data, cursor)
        value, cursor = _read_bytes(data, cursor + 4, value_length, stop, offset)
    except struct.error as exc:
        raise CorruptRecordError(f"legacy message is truncated: {exc}", offset) from exc
    if cursor != stop:
        raise CorruptRecordError(f"legacy message size {size} does not match its fields", offset)
    return LegacyMessage(pos, size + LOG_OVERHEAD, offset, crc, magic, attributes, timestamp,
                         key, value)


def _read_bytes(data: bytes, pos: int, length: int, stop: int,
                offset: int) -> tuple[bytes | None, int]:
    if length == -1:
        return None, pos
    if length < 0 or pos + length > stop:
        raise CorruptRecordError(f"legacy message field length {length} is invalid", offset)
    return data[pos:pos + length], pos + length


def read_inner_messages(wrapper: LegacyMessage, *, check_crcs: bool,
                        max_bytes: int | None = None) -> list[LegacyMessage]:
    """Decompress a wrapper (to at most ``max_bytes``) and parse every inner message,
    which must fill it exactly."""
    if wrapper.value is None:
        raise CorruptRecordError("compressed wrapper message has a null value", wrapper.offset)
    inner = decompress(wrapper.compression, wrapper.value, magic=wrapper.magic,
                       max_bytes=max_bytes)
    messages = []
    pos = 0
    while pos < len(inner):
        message = read_message(inner, pos)
        if message.magic != wrapper.magic or message.compression != NONE:
            raise CorruptRecordError("inner message must be uncompressed and have the "
                                     "wrapper's magic", wrapper.offset)
        if check_crcs and not message.crc_is_valid(inner):
            raise CorruptRecordError("inner message CRC mismatch", message.offset)
        messages.append(message)
        pos += message.size
    if not messages:
        raise CorruptRecordError("compressed wrapper message holds no messages", wrapper.offset)
    return messages


def decode_entry(data: bytes, batch: RecordBatchView, *, check_crcs: bool,
                 max_bytes: int | None = None) -> list[Record]:
    """The records of one legacy entry: itself, or a wrapper's inner messages (whose
    decompressed size ``max_bytes`` bounds)."""
    message = read_message(data, batch.header.position)
    log_append = bool(message.attributes & TIMESTAMP_TYPE_BIT) and message.magic == 1
    if message.compression == NONE:
        return [Record(message.offset, message.timestamp, message.key, message.value,
                       NO_HEADERS, batch)]
    inner = read_inner_messages(message, check_crcs=check_crcs, max_bytes=max_bytes)
    shift = _inner_offset_shift(message, inner)
    return [Record(m.offset + shift, message.timestamp if log_append else m.timestamp,
                   m.key, m.value, NO_HEADERS, batch) for m in inner]


def _inner_offset_shift(wrapper: LegacyMessage, inner: list[LegacyMessage]) -> int:
    """What to add to inner offsets to make them absolute (Java's reader rules)."""
    if wrapper.magic == 0 or wrapper.offset == 0:
        return 0  # v0: already absolute; v1 wrapper offset 0: inner offsets count from 0
    last_relative = inner[-1].offset
    if wrapper.offset < last_relative:
        raise CorruptRecordError(f"wrapper offset is below its last inner offset "
                                 f"{last_relative}", wrapper.offset)
    return wrapper.offset - last_relative


def _restamped(data: bytes, message: LegacyMessage, offset: int) -> bytes:
    """The message's bytes with a new offset; the offset is outside the CRC."""
    return _OFFSET.pack(offset) + data[message.position + 8:message.position + message.size]


def assign_legacy_offsets(message_set: bytes, base_offset: int, *,
                          max_bytes: int | None = None) -> tuple[bytes, int]:
    """Stamp a produced legacy message set with log offsets starting at ``base_offset``.

    Returns the new bytes and the last offset assigned (``base_offset - 1`` for an
    empty set). Every entry's CRC is checked first, so a corrupt message is never
    re-checksummed into a valid one. Uncompressed messages and magic-1 wrappers whose
    inner offsets are already 0..n-1 are only restamped; magic-0 wrappers (and magic-1
    wrappers with other inner offsets) are decompressed, rewritten and recompressed.
    """
    data = bytes(message_set)
    parts = []
    next_offset = base_offset
    pos = 0
    while pos < len(data):
        message = read_message(data, pos)
        if not message.crc_is_valid(data):
            raise CorruptRecordError("legacy message CRC mismatch", message.offset)
        if message.compression == NONE:
            parts.append(_restamped(data, message, next_offset))
            next_offset += 1
        else:
            inner = read_inner_messages(message, check_crcs=True, max_bytes=max_bytes)
            last_offset = next_offset + len(inner) - 1
            relative = message.magic == 1
            if relative and all(m.offset == i for i, m in enumerate(inner)):
                parts.append(_restamped(data, message, last_offset))
            else:
                parts.append(_rewrap(message, inner, next_offset, last_offset, relative))
            next_offset = last_offset + 1
        pos += message.size
    return b"".join(parts), next_offset - 1


def _rewrap(wrapper: LegacyMessage, inner: list[LegacyMessage], first_offset: int,
            last_offset: int, relative: bool) -> bytes:
    first = 0 if relative else first_offset
    inner_set = b"".join(
        encode_message(first + i, m.magic, m.attributes, m.timestamp, m.key, m.value)
        for i, m in enumerate(inner))
    value = compress(wrapper.compression, inner_set, magic=wrapper.magic)
    return encode_message(last_offset, wrapper.magic, wrapper.attributes, wrapper.timestamp,
                          wrapper.key, value)
