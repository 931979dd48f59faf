"""The LZ4 frame header checksum, and the broken variant magic-0 messages carry.

Kafka before 0.10 computed the frame descriptor's header checksum (HC) over the
4-byte frame magic as well as the descriptor (KAFKA-3160). Magic-0 messages keep
that quirk on the wire, so writers must break the HC and readers must repair it
before a standard LZ4 decoder accepts the frame. The HC is the second byte of
xxHash32 of a few header bytes; the inputs are tiny, so a pure-Python xxHash32
costs nothing measurable and avoids another dependency.
"""

from __future__ import annotations

from kafkalite.errors import CorruptRecordError

_PRIME1 = 2654435761
_PRIME2 = 2246822519
_PRIME3 = 3266489917
_PRIME4 = 668265263
_PRIME5 = 374761393
_MASK = 0xFFFFFFFF

_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_FLG = 4
_CONTENT_SIZE_FLAG = 0x08
_DICT_ID_FLAG = 0x01


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (reference algorithm; meant for short inputs)."""
    length = len(data)
    pos = 0
    if length >= 16:
        acc = [(seed + _PRIME1 + _PRIME2) & _MASK, (seed + _PRIME2) & _MASK, seed,
               (seed - _PRIME1) & _MASK]
        while pos + 16 <= length:
            for lane in range(4):
                word = int.from_bytes(data[pos:pos + 4], "little")
                acc[lane] = (_rotl((acc[lane] + word * _PRIME2) & _MASK, 13) * _PRIME1) & _MASK
                pos += 4
        h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _MASK
    else:
        h = (seed + _PRIME5) & _MASK
    h = (h + length) & _MASK
    while pos + 4 <= length:
        word = int.from_bytes(data[pos:pos + 4], "little")
        h = (_rotl((h + word * _PRIME3) & _MASK, 17) * _PRIME4) & _MASK
        pos += 4
    while pos < length:
        h = (_rotl((h + data[pos] * _PRIME5) & _MASK, 11) * _PRIME1) & _MASK
        pos += 1
    h = ((h ^ (h >> 15)) * _PRIME2) & _MASK
    h = ((h ^ (h >> 13)) * _PRIME3) & _MASK
    return h ^ (h >> 16)


def _checksum_position(frame: bytes | bytearray) -> int:
    """Index of the HC byte: after magic, FLG, BD and the optional size and dict id."""
    if len(frame) < 7 or frame[:4] != _FRAME_MAGIC:
        raise CorruptRecordError("lz4 data does not start with an LZ4 frame header")
    flags = frame[_FLG]
    position = 6
    if flags & _CONTENT_SIZE_FLAG:
        position += 8
    if flags & _DICT_ID_FLAG:
        position += 4
    if len(frame) <= position:
        raise CorruptRecordError("lz4 frame header is truncated")
    return position


def break_header_checksum(frame: bytes) -> bytes:
    """Rewrite a correct frame's HC the way pre-0.10 Kafka computed it (magic included)."""
    position = _checksum_position(frame)
    broken = (xxh32(frame[:position]) >> 8) & 0xFF
    return b"".join((frame[:position], bytes((broken,)), frame[position + 1:]))


def repair_header_checksum(frame: bytes) -> bytes:
    """Give a frame the correct HC, whichever variant it had, so a standard decoder reads it."""
    position = _checksum_position(frame)
    correct = (xxh32(frame[_FLG:position]) >> 8) & 0xFF
    if frame[position] == correct:
        return frame
    return b"".join((frame[:position], bytes((correct,)), frame[position + 1:]))
