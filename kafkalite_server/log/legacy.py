"""Legacy (magic 0/1) compressed wrapper messages, as far as the broker must open them.

A wrapper's value is a compressed inner message set. The broker needs the inner count
(a v1 wrapper's offset is that of its last inner message) and, for magic 0, must rewrite
the inner absolute offsets and recompress. v2 batches never come through here.
"""

from __future__ import annotations

import struct
import zlib

from kafkalite.errors import CorruptRecordError
from kafkalite.records.batch_header import LOG_OVERHEAD, BatchHeader, iter_batch_headers
from kafkalite.records.compression import compress, decompress

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_KEY_LENGTH_AT = {0: LOG_OVERHEAD + 6, 1: LOG_OVERHEAD + 14}
"""Where the key length sits in an entry: after crc, magic, attributes (and timestamp)."""


def _value_span(entry: bytes | bytearray | memoryview, magic: int) -> tuple[int, int, int]:
    """(key length position, value start, value end) inside one legacy entry."""
    key_at = _KEY_LENGTH_AT[magic]
    try:
        (key_length,) = _INT32.unpack_from(entry, key_at)
        value_length_at = key_at + 4 + max(key_length, 0)
        (value_length,) = _INT32.unpack_from(entry, value_length_at)
    except struct.error:
        raise CorruptRecordError("legacy message is shorter than its key") from None
    start = value_length_at + 4
    end = start + max(value_length, 0)
    if end > len(entry):
        raise CorruptRecordError("legacy message value runs past the entry")
    return key_at, start, end


def legacy_key_value(entry: bytes | bytearray | memoryview,
                     magic: int) -> tuple[bytes | None, bytes | None]:
    """Key and value of one uncompressed legacy entry (``None`` for a null field)."""
    key_at, value_start, value_end = _value_span(entry, magic)
    (key_length,) = _INT32.unpack_from(entry, key_at)
    (value_length,) = _INT32.unpack_from(entry, value_start - 4)
    key = bytes(entry[key_at + 4:key_at + 4 + key_length]) if key_length >= 0 else None
    value = bytes(entry[value_start:value_end]) if value_length >= 0 else None
    return key, value


def decompress_wrapper(entry: bytes | bytearray | memoryview,
                       header: BatchHeader) -> tuple[bytes, list[BatchHeader]]:
    """The inner message set of a wrapper and its entries' headers (positions inside it)."""
    _, start, end = _value_span(entry, header.magic)
    inner = decompress(header.compression, memoryview(entry)[start:end], magic=header.magic)
    inner_headers = list(iter_batch_headers(inner))
    if not inner_headers or sum(h.size for h in inner_headers) != len(inner):
        raise CorruptRecordError("wrapper message holds a truncated or empty inner set",
                                 header.base_offset)
    for inner_header in inner_headers:
        if inner_header.magic != header.magic or inner_header.compression:
            raise CorruptRecordError("inner message must be uncompressed and of the "
                                     "wrapper's magic", header.base_offset)
    return inner, inner_headers


def rebuild_v0_wrapper(entry: bytes | bytearray | memoryview, header: BatchHeader,
                       first_offset: int) -> bytes:
    """A magic-0 wrapper with inner offsets ``first_offset..`` recompressed, CRC-32 fresh."""
    inner, inner_headers = decompress_wrapper(entry, header)
    renumbered = bytearray(inner)
    for i, inner_header in enumerate(inner_headers):
        _INT64.pack_into(renumbered, inner_header.position, first_offset + i)
    _, value_start, _ = _value_span(entry, 0)
    value = compress(header.compression, renumbered, magic=0)
    body = (bytes(entry[LOG_OVERHEAD + 4:value_start - 4]) + _INT32.pack(len(value)) + value)
    crc = zlib.crc32(body)
    last_offset = first_offset + len(inner_headers) - 1
    return _INT64.pack(last_offset) + _INT32.pack(4 + len(body)) + struct.pack(">I", crc) + body
