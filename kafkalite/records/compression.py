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
unknown codec :class:`UnsupportedCodecError`, and output beyond a reader's bound
:class:`DecompressedSizeError` (see :func:`iter_decompress`).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import lz4.frame
import snappy
import zstandard

from kafkalite.errors import CorruptRecordError, DecompressedSizeError, UnsupportedCodecError
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


def decompress(codec: Codec, data: bytes | bytearray | memoryview, *, magic: int = 2,
               max_bytes: int | None = None) -> bytes:
    """Inverse of :func:`compress`; also reads raw snappy and correct magic-0 lz4 frames.

    With ``max_bytes`` the output is produced in bounded chunks and stops with
    :class:`DecompressedSizeError` as soon as it would exceed that many bytes, so a
    small payload that expands enormously (a decompression bomb) costs at most
    ``max_bytes`` of memory and the time to produce them.
    """
    if max_bytes is None:
        max_bytes = _UNBOUNDED
    return b"".join(iter_decompress(codec, data, magic=magic, max_bytes=max_bytes))


_UNBOUNDED = 1 << 62
DECOMPRESS_CHUNK = 256 * 1024
"""Largest piece :func:`iter_decompress` asks a stream decoder for at a time."""
_ZSTD_MAX_WINDOW = 1 << 24
"""The largest zstd window (back-reference distance) a frame may ask for: zstd allocates
the declared window up front, so it is capped too. Streaming compressors use at most
8 MiB up to level 19; one-shot frames (librdkafka, the Java client) shrink it to the
content size."""

_INPUT_STEP = 64 * 1024
"""Compressed bytes fed to a gzip or lz4 decoder at a time: the bindings copy whatever
input a bounded call leaves unconsumed, so feeding a whole batch at once would copy it
again on every chunk."""
_ZSTD_INPUT_STEP = 128
"""Compressed bytes per zstd step; at most 32 blocks of 128 KiB (4 MiB) can come of them."""


def iter_decompress(codec: Codec, data: bytes | bytearray | memoryview, *, max_bytes: int,
                    magic: int = 2, chunk_size: int = DECOMPRESS_CHUNK) -> Iterator[bytes]:
    """Yield the decompressed bytes piece by piece, never more than ``max_bytes`` in all.

    gzip and lz4 are stream-decoded ``chunk_size`` bytes at a time; zstd a few input
    bytes at a time (its binding cannot cap one call's output); snappy blocks carry their
    decompressed size up front, so each is checked before it is decoded.
    Past the bound, :class:`DecompressedSizeError` names it; bad data raises
    :class:`CorruptRecordError`.
    """
    resolved = _checked(codec, magic)
    if resolved == NONE:
        if len(data) > max_bytes:
            raise DecompressedSizeError(max_bytes)
        yield bytes(data)
        return
    pieces = {GZIP: _gunzip, SNAPPY: _unsnappy, LZ4: _unlz4, ZSTD: _unzstd}[resolved]
    total = 0
    try:
        for piece in pieces(data, chunk_size, max_bytes, magic):
            total += len(piece)
            if total > max_bytes:
                raise DecompressedSizeError(max_bytes)
            yield piece
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


def _unsnappy(data: bytes | bytearray | memoryview, _chunk_size: int, max_bytes: int,
              _magic: int) -> Iterator[bytes]:
    data = bytes(data)
    if not data.startswith(_XERIAL_MAGIC):
        yield _snappy_block(data, max_bytes)
        return
    pos = len(_XERIAL_HEADER)
    end = len(data)
    if end < pos:
        raise CorruptRecordError("xerial snappy header is truncated")
    budget = max_bytes
    while pos < end:
        if pos + 4 > end:
            raise CorruptRecordError("xerial snappy block length is truncated")
        (length,) = _XERIAL_LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise CorruptRecordError(f"xerial snappy block length {length} overruns the data")
        block = _snappy_block(data[pos:pos + length], budget)
        budget -= len(block)
        yield block
        pos += length


def _snappy_block(block: bytes, max_bytes: int) -> bytes:
    """One raw snappy block, after checking the size its preamble declares."""
    size, shift, pos = 0, 0, 0
    while True:  # the preamble: the decompressed size as an unsigned varint
        if pos >= len(block) or pos > 4:
            raise CorruptRecordError("snappy block preamble is invalid")
        byte = block[pos]
        size |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            break
        shift += 7
    if size > max_bytes:
        raise DecompressedSizeError(max_bytes)
    output: bytes = snappy.decompress(block)
    return output


def _gunzip(data: bytes | bytearray | memoryview, chunk_size: int, _max_bytes: int,
            _magic: int) -> Iterator[bytes]:
    remaining = memoryview(bytes(data))
    while remaining:  # a gzip stream may hold several members
        unpacker = zlib.decompressobj(_GZIP_WBITS)
        offset = 0
        while not unpacker.eof:
            if unpacker.unconsumed_tail:
                yield unpacker.decompress(unpacker.unconsumed_tail, chunk_size)
            elif offset < len(remaining):
                yield unpacker.decompress(remaining[offset:offset + _INPUT_STEP], chunk_size)
                offset += _INPUT_STEP
            else:
                raise CorruptRecordError("gzip data is truncated")
        remaining = memoryview(unpacker.unused_data + remaining[offset:])


def _unlz4(data: bytes | bytearray | memoryview, chunk_size: int, _max_bytes: int,
           magic: int) -> Iterator[bytes]:
    remaining = memoryview(repair_header_checksum(bytes(data)) if magic == 0 else bytes(data))
    while remaining:  # frames may follow each other
        unpacker = lz4.frame.LZ4FrameDecompressor()
        offset = 0
        while not unpacker.eof:
            if not unpacker.needs_input:
                yield unpacker.decompress(b"", chunk_size)
            elif offset < len(remaining):
                yield unpacker.decompress(remaining[offset:offset + _INPUT_STEP], chunk_size)
                offset += _INPUT_STEP
            else:
                raise CorruptRecordError("lz4 data is truncated")
        remaining = memoryview((unpacker.unused_data or b"") + remaining[offset:])


def _unzstd(data: bytes | bytearray | memoryview, _chunk_size: int, _max_bytes: int,
            _magic: int) -> Iterator[bytes]:
    """Frames fed ``_ZSTD_INPUT_STEP`` bytes at a time: the zstd binding cannot cap the
    output of one call, but a few input bytes can only expand so far."""
    decompressor = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
    remaining = bytes(data)
    while remaining:  # frames may lack a content size, and there may be several
        unpacker = decompressor.decompressobj()
        view = memoryview(remaining)
        remaining = b""
        for start in range(0, len(view), _ZSTD_INPUT_STEP):
            yield unpacker.decompress(view[start:start + _ZSTD_INPUT_STEP])
            if unpacker.eof:
                remaining = unpacker.unused_data + view[start + _ZSTD_INPUT_STEP:]
                break
        if not unpacker.eof:
            raise CorruptRecordError("zstd data is truncated")
