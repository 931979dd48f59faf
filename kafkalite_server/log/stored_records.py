"""Opening one stored batch into its records, for the few broker paths that need them.

The produce and fetch paths never do this. ListOffsets by timestamp does (the time index
narrows the search to a batch; the answer is a record inside it), and so does
``dump-log --deep-iteration``. v2 records are walked field by field; legacy wrappers are
decompressed and their inner messages read.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from kafkalite.errors import CorruptRecordError, ProtocolDecodeError
from kafkalite.protocol.varint import decode_varint
from kafkalite.records.batch_header import V2_HEADER_SIZE, BatchHeader
from kafkalite.records.compression import decompress
from kafkalite_server.log.legacy import decompress_wrapper, legacy_key_value

_BASE_TIMESTAMP = struct.Struct(">q")
_BASE_TIMESTAMP_AT = 27


@dataclass(frozen=True, slots=True)
class StoredRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def iter_stored_records(batch: bytes, header: BatchHeader) -> Iterator[StoredRecord]:
    """Every record of a stored v2 batch or legacy entry; CorruptRecordError if malformed."""
    try:
        if header.magic == 2:
            yield from _v2_records(batch, header)
        elif header.compression:
            yield from _wrapper_records(batch, header)
        else:
            key, value = legacy_key_value(batch, header.magic)
            yield StoredRecord(header.base_offset, header.max_timestamp, key, value)
    except (ProtocolDecodeError, IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(f"malformed records: {exc}", header.base_offset) from None


def _wrapper_records(batch: bytes, header: BatchHeader) -> Iterator[StoredRecord]:
    inner, inner_headers = decompress_wrapper(batch, header)
    last_inner = inner_headers[-1].base_offset
    for inner_header in inner_headers:
        offset = inner_header.base_offset
        if header.magic == 1:  # v1 inner offsets are relative, anchored at the wrapper's
            offset = header.last_offset - last_inner + inner_header.base_offset
        timestamp = header.max_timestamp if header.timestamp_type else inner_header.max_timestamp
        entry = inner[inner_header.position:inner_header.position + inner_header.size]
        key, value = legacy_key_value(entry, inner_header.magic)
        yield StoredRecord(offset, timestamp, key, value)


def _v2_records(batch: bytes, header: BatchHeader) -> Iterator[StoredRecord]:
    (base_timestamp,) = _BASE_TIMESTAMP.unpack_from(batch, _BASE_TIMESTAMP_AT)
    records = batch[V2_HEADER_SIZE:]
    if header.compression:
        records = decompress(header.compression, records)
    position = 0
    for _ in range(header.record_count):
        length, body = decode_varint(records, position)
        end = body + length
        if length < 0 or end > len(records):
            raise CorruptRecordError("record runs past its batch", header.base_offset)
        timestamp_delta, pos = decode_varint(records, body + 1)
        offset_delta, pos = decode_varint(records, pos)
        key, pos = _varint_bytes(records, pos)
        value, pos = _varint_bytes(records, pos)
        count, pos = decode_varint(records, pos)
        headers = []
        for _ in range(count):
            name, pos = _varint_bytes(records, pos)
            header_value, pos = _varint_bytes(records, pos)
            headers.append(((name or b"").decode(), header_value))
        timestamp = header.max_timestamp if header.timestamp_type else \
            base_timestamp + timestamp_delta
        yield StoredRecord(header.base_offset + offset_delta, timestamp, key, value,
                           tuple(headers))
        position = end


def _varint_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = decode_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise CorruptRecordError("record field runs past its batch")
    return buf[pos:pos + length], pos + length


def first_record_at_or_after(batch: bytes, header: BatchHeader, timestamp: int,
                             start_offset: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record at or after both targets in the batch."""
    for record in iter_stored_records(batch, header):
        if record.timestamp >= timestamp and record.offset >= start_offset:
            return record.offset, record.timestamp
    return max(header.last_offset, start_offset), header.max_timestamp

