"""Variable-length integers: unsigned LEB128 and zig-zag signed varint/varlong.

Shared by the protocol (compact lengths, tagged fields) and the record formats
(every field inside a v2 record). Decoders take ``(buffer, position)`` and return
``(value, next_position)`` so callers walk a buffer without slicing it.
"""

from __future__ import annotations

from kafkalite.errors import ProtocolDecodeError

_MAX_UVARINT_BYTES = 10
_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))
# Zig-zag maps -64..63 onto one byte; precomputed because most record fields are small.
_ZIGZAG_ONE_BYTE = {v: _ONE_BYTE[(v << 1) ^ (v >> 63)] for v in range(-64, 64)}


def encode_uvarint(value: int) -> bytes:
    """Encode a non-negative integer as unsigned LEB128."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if value < 0:
        raise ValueError(f"unsigned varint cannot encode {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a signed 32- or 64-bit integer with zig-zag, then LEB128."""
    small = _ZIGZAG_ONE_BYTE.get(value)
    if small is not None:
        return small
    return encode_uvarint((value << 1) ^ (value >> 63))


def decode_uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode an unsigned LEB128 integer starting at ``pos``."""
    try:
        byte = buf[pos]
    except IndexError:
        raise ProtocolDecodeError(f"truncated varint at byte {pos}") from None
    if byte < 0x80:
        return byte, pos + 1
    result = byte & 0x7F
    shift = 7
    end = pos + _MAX_UVARINT_BYTES
    pos += 1
    while pos < end:
        try:
            byte = buf[pos]
        except IndexError:
            raise ProtocolDecodeError(f"truncated varint at byte {pos}") from None
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise ProtocolDecodeError(f"varint longer than {_MAX_UVARINT_BYTES} bytes at byte {end - 10}")


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag signed varint or varlong starting at ``pos``."""
    raw, pos = decode_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def uvarint_size(value: int) -> int:
    """Bytes :func:`encode_uvarint` would produce, without building them."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def varint_size(value: int) -> int:
    """Bytes :func:`encode_varint` would produce, without building them."""
    return uvarint_size((value << 1) ^ (value >> 63))
