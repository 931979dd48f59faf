"""Compression codecs of Kafka record batches and wrapper messages, by id and by name.

Each codec follows what the Java client writes and what every client reads:

- gzip: a standard gzip stream (level 6, mtime 0, like Java's ``GZIPOutputStream``).
- snappy: written with the xerial/snappy-java framing Java uses; read framed (only the
  8-byte magic is checked, as some producers write the version fields little-endian) or
  as one raw block (librdkafka writes raw).
- lz4: an LZ4 frame with independent blocks and no content size (Kafka rejects linked
  blocks); magic 0 carries the broken header checksum of KAFKA-3160.
- zstd: zstd frames, magic 2 only; frames without a content size are stream-decoded.

Library exceptions never escape: bad input raises :class:`CorruptRecordError`, an
unknown codec :class:`UnsupportedCodecError`.
"""

from __future__ import annotations

import struct
import zlib

import lz4.frame
import snappy
import zstandard

from kafkalite.errors import CorruptRecordError, UnsupportedCodecError
from kafkalite.records.lz4_header import break_header_checksum, repair_header_checksum

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
_CODEC_IDS = {name: codec for codec, name in CODEC_NAMES.items()}

_GZIP_LEVEL = 6
_GZIP_WBITS = 31  # zlib's gzip container
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_XERIAL_LENGTH = struct.Struct(">i")
_ZSTD_LEVEL = 3

Codec = int | str | None
"""A codec id (0-4) or name (``None``/"none", "gzip", "snappy", "lz4", "zstd")."""


def codec_id(name: Codec) -> int:
    """The attribute-bits id of a codec given by name (or already by id)."""
    if name is None:
        return NONE
    if isinstance(name, int) and not isinstance(name, bool):
        if name in CODEC_NAMES:
            return name
        raise UnsupportedCodecError(f"unknown compression codec id {name}")
    if isinstance(name, str) and name.lower() in _CODEC_IDS:
        return _CODEC_IDS[name.lower()]
    raise UnsupportedCodecError(f"unknown compression codec {name!r}")


def codec_name(codec: int) -> str:
    """The name of a codec id, e.g. for error messages and configuration echo."""
    return CODEC_NAMES[codec_id(codec)]


def _checked(codec: Codec, magic: int) -> int:
    resolved = codec_id(codec)
    if resolved == ZSTD and magic < 2:
        raise UnsupportedCodecError(f"zstd compression needs record magic 2, not magic {magic}")
    return resolved


def compress(codec: Codec, data: bytes | bytearray | memoryview, *, magic: int = 2) -> bytes:
    """Compress a records section (magic 2) or an inner message set (magic 0/1)."""
    resolved = _checked(codec, magic)
    if resolved == NONE:
        return bytes(data)
    if resolved == GZIP:
        packer = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
        return packer.compress(data) + packer.flush()
    if resolved == SNAPPY:
        return _xerial_snappy(data)
    if resolved == LZ4:
        frame: bytes = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                          block_linked=False, store_size=False)
        return break_header_checksum(frame) if magic == 0 else frame
    return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(data)


def decompress(codec: Codec, data: bytes | bytearray | memoryview, *, magic: int = 2) -> bytes:
    """Inverse of :func:`compress`; also reads raw snappy and correct magic-0 lz4 frames."""
    resolved = _checked(codec, magic)
    if resolved == NONE:
        return bytes(data)
    try:
        if resolved == GZIP:
            return _gunzip(data)
        if resolved == SNAPPY:
            return _unsnappy(bytes(data))
        if resolved == LZ4:
            frame = repair_header_checksum(bytes(data)) if magic == 0 else data
            output: bytes = lz4.frame.decompress(frame)
            return output
        return _unzstd(data)
    except CorruptRecordError:
        raise
    except Exception as exc:  # the codec libraries raise many unrelated types
        raise CorruptRecordError(f"{CODEC_NAMES[resolved]} data does not decompress: "
                                 f"{exc}") from exc


def _xerial_snappy(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = snappy.compress(bytes(view[start:start + _XERIAL_BLOCK]))
        parts.append(_XERIAL_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _unsnappy(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        output: bytes = snappy.decompress(data)
        return output
    parts = []
    pos = len(_XERIAL_HEADER)
    end = len(data)
    if end < pos:
        raise CorruptRecordError("xerial snappy header is truncated")
    while pos < end:
        if pos + 4 > end:
            raise CorruptRecordError("xerial snappy block length is truncated")
        (length,) = _XERIAL_LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise CorruptRecordError(f"xerial snappy block length {length} overruns the data")
        parts.append(snappy.decompress(data[pos:pos + length]))
        pos += length
    return b"".join(parts)


def _gunzip(data: bytes | bytearray | memoryview) -> bytes:
    parts = []
    remaining = bytes(data)
    while remaining:  # a gzip stream may hold several members
        unpacker = zlib.decompressobj(_GZIP_WBITS)
        parts.append(unpacker.decompress(remaining))
        if not unpacker.eof:
            raise CorruptRecordError("gzip data is truncated")
        remaining = unpacker.unused_data
    return b"".join(parts)


def _unzstd(data: bytes | bytearray | memoryview) -> bytes:
    parts = []
    remaining = bytes(data)
    decompressor = zstandard.ZstdDecompressor()
    while remaining:  # frames may lack a content size, and there may be several
        unpacker = decompressor.decompressobj()
        parts.append(unpacker.decompress(remaining))
        if not unpacker.eof:
            raise CorruptRecordError("zstd data is truncated")
        remaining = unpacker.unused_data
    return b"".join(parts)
