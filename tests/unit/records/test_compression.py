import gzip
import os
import struct

import lz4.frame
import pytest
import snappy
import zstandard

from kafkalite.errors import CorruptRecordError, UnsupportedCodecError
from kafkalite.records.compression import codec_id, codec_name, compress, decompress
from kafkalite.records.lz4_header import xxh32

PAYLOAD = b"".join(b"record %06d " % i + os.urandom(8) for i in range(8000))  # ~150 KB
XERIAL_MAGIC = b"\x82SNAPPY\x00"


@pytest.mark.parametrize(("name", "expected"), [
    (None, 0), ("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4), ("LZ4", 3),
    (3, 3),
])
def test_codec_ids(name: str | int | None, expected: int) -> None:
    assert codec_id(name) == expected


@pytest.mark.parametrize("bad", ["brotli", 5, 7, -1])
def test_unknown_codec_is_named(bad: str | int) -> None:
    with pytest.raises(UnsupportedCodecError, match=str(bad)):
        codec_id(bad)
    with pytest.raises(UnsupportedCodecError, match=str(bad)):
        decompress(bad, b"data")


def test_codec_names() -> None:
    assert [codec_name(i) for i in range(5)] == ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_round_trip(codec: str, magic: int) -> None:
    if codec == "zstd" and magic < 2:
        with pytest.raises(UnsupportedCodecError, match="zstd"):
            compress(codec, PAYLOAD, magic=magic)
        return
    packed = compress(codec, PAYLOAD, magic=magic)
    assert decompress(codec, packed, magic=magic) == PAYLOAD
    assert decompress(codec, bytearray(packed), magic=magic) == PAYLOAD
    assert compress(codec, memoryview(PAYLOAD), magic=magic) == packed


def test_gzip_is_a_standard_stream_and_multi_member_reads() -> None:
    packed = compress("gzip", PAYLOAD)
    assert gzip.decompress(packed) == PAYLOAD
    assert decompress("gzip", gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_snappy_writes_xerial_framing_in_32k_chunks() -> None:
    packed = compress("snappy", PAYLOAD)
    assert packed[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    pos, chunks = 16, []
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        chunks.append(snappy.decompress(packed[pos + 4:pos + 4 + length]))
        pos += 4 + length
    assert [len(c) for c in chunks[:-1]] == [32 * 1024] * (len(chunks) - 1)
    assert b"".join(chunks) == PAYLOAD


def test_snappy_reads_raw_blocks_and_little_endian_xerial_versions() -> None:
    assert decompress("snappy", snappy.compress(PAYLOAD)) == PAYLOAD  # librdkafka style
    framed = bytearray(compress("snappy", PAYLOAD))
    framed[8:16] = struct.pack("<ii", 1, 1)
    assert decompress("snappy", bytes(framed)) == PAYLOAD


def test_lz4_frame_has_independent_blocks_and_no_content_size() -> None:
    packed = compress("lz4", PAYLOAD)
    flags = packed[4]
    assert flags & 0x20, "block independence flag must be set"
    assert not flags & 0x08, "Java writes no content size"
    assert lz4.frame.decompress(packed) == PAYLOAD


def test_lz4_magic_0_writes_the_broken_header_checksum() -> None:
    packed = compress("lz4", PAYLOAD, magic=0)
    with pytest.raises(RuntimeError, match="headerChecksum"):
        lz4.frame.decompress(packed)  # a standard reader rejects the KAFKA-3160 checksum
    assert packed[6] == (xxh32(packed[:6]) >> 8) & 0xFF
    assert decompress("lz4", packed, magic=0) == PAYLOAD
    # magic 0 readers also accept a correct frame, e.g. from kafka-python with store_size
    correct = lz4.frame.compress(PAYLOAD, block_linked=False)
    assert decompress("lz4", correct, magic=0) == PAYLOAD


def test_xxh32_matches_the_lz4_library_header_checksums() -> None:
    for store_size in (False, True):
        frame = lz4.frame.compress(b"abc", store_size=store_size)
        end = 14 if store_size else 6
        assert frame[end] == (xxh32(frame[4:end]) >> 8) & 0xFF
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a" * 37, seed=7) != xxh32(b"a" * 37)


def test_zstd_reads_frames_without_content_size_and_several_frames() -> None:
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD)
    assert decompress("zstd", no_size) == PAYLOAD
    assert decompress("zstd", no_size + no_size) == PAYLOAD * 2


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_corrupt_data_raises_corrupt_record_error(codec: str) -> None:
    packed = compress(codec, PAYLOAD)
    for broken in (packed[: len(packed) // 2], b"\x00" * 40, packed[:20] + b"\xff" * 50):
        with pytest.raises(CorruptRecordError, match=codec):
            decompress(codec, broken)


def test_corrupt_xerial_chunk_length() -> None:
    framed = XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", 1000) + b"abc"
    with pytest.raises(CorruptRecordError, match="overruns"):
        decompress("snappy", framed)


def test_corrupt_lz4_magic_0_header() -> None:
    with pytest.raises(CorruptRecordError, match="LZ4 frame"):
        decompress("lz4", b"not lz4 at all", magic=0)
