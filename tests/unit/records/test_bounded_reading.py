"""Bounded decompression and record validation: a bomb costs its bound, not its expansion."""

from __future__ import annotations

import os
import tracemalloc
import zlib

import lz4.frame
import pytest
import snappy
import zstandard

from kafkalite.errors import CorruptRecordError, DecompressedSizeError
from kafkalite.protocol.varint import encode_varint
from kafkalite.records import compress, decompress, encode_batch, iter_batches, iter_decompress
from kafkalite.records.batch_header import read_batch_header
from kafkalite.records.validation import InvalidRecordsError, check_batch_records

MIB = 1 << 20
CODECS = ("gzip", "snappy", "lz4", "zstd")


def bomb(codec: str, size: int) -> bytes:
    """``size`` zero bytes compressed by ``codec``, built without holding them whole."""
    zeros = bytes(MIB)
    if codec == "gzip":
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join([packer.compress(zeros) for _ in range(size // MIB)] + [packer.flush()])
    if codec == "lz4":
        packer = lz4.frame.LZ4FrameCompressor(block_linked=False)
        return b"".join([packer.begin()] + [packer.compress(zeros)
                                            for _ in range(size // MIB)] + [packer.flush()])
    if codec == "zstd":
        packer = zstandard.ZstdCompressor().compressobj()
        return b"".join([packer.compress(zeros) for _ in range(size // MIB)] + [packer.flush()])
    return snappy.compress(bytes(size))  # one raw block: its preamble declares the size


@pytest.mark.parametrize("codec", CODECS)
def test_a_bomb_stops_at_the_bound_with_bounded_memory(codec: str) -> None:
    data = bomb(codec, 64 * MIB)
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedSizeError, match="more than 1048576 bytes"):
            decompress(codec, data, max_bytes=MIB)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MIB


@pytest.mark.parametrize("codec", CODECS)
def test_bounded_decompression_round_trips_in_small_pieces(codec: str) -> None:
    payload = os.urandom(1000) * 300
    pieces = list(iter_decompress(codec, compress(codec, payload), max_bytes=len(payload),
                                  chunk_size=4096))
    assert b"".join(pieces) == payload
    if codec in ("gzip", "lz4"):  # snappy blocks come whole; zstd steps through its input
        assert max(map(len, pieces)) <= 4096
    with pytest.raises(DecompressedSizeError):
        decompress(codec, compress(codec, payload), max_bytes=len(payload) - 1)


@pytest.mark.parametrize("codec", CODECS)
def test_truncated_data_is_corrupt_not_short(codec: str) -> None:
    packed = compress(codec, os.urandom(5000) * 4)
    with pytest.raises(CorruptRecordError):
        decompress(codec, packed[:len(packed) // 2], max_bytes=MIB)


def test_a_consumer_reading_a_bomb_batch_gets_a_typed_error_with_bounded_memory() -> None:
    """The records layer the consumer decodes with: one batch, bounded by max_bytes."""
    head = b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(-1) \
        + encode_varint(64 * MIB)
    records = encode_varint(len(head) + 64 * MIB + 1) + head + bytes(64 * MIB) + b"\x00"
    data = encode_batch([(None, b"x", 0, None)], compression="gzip")
    header = read_batch_header(data)
    assert header is not None
    packed = zlib.compress(records, 9, 31)  # gzip container
    data = _with_section(data, packed, 1)
    del records
    batch = next(iter_batches(data))
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedSizeError):
            batch.records(max_bytes=MIB)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MIB


def _with_section(template: bytes, section: bytes, count: int) -> bytes:
    """``template``'s v2 header around another records section, CRC recomputed."""
    import struct

    import crc32c
    header = bytearray(template[:61])
    struct.pack_into(">i", header, 8, 49 + len(section))
    struct.pack_into(">i", header, 23, count - 1)
    struct.pack_into(">i", header, 57, count)
    crc = crc32c.crc32c(section, crc32c.crc32c(bytes(header[21:])))
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + section


@pytest.mark.parametrize("codec", (None, *CODECS))
def test_valid_batches_pass_record_validation(codec: str | None) -> None:
    data = encode_batch([(b"k%d" % i if i % 2 else None, os.urandom(i * 50), 1000 + i,
                          [("h", b"v"), ("n", None)] if i % 3 else None)
                         for i in range(200)], compression=codec)
    header = read_batch_header(data)
    assert header is not None
    check_batch_records(data, header, max_bytes=MIB)
    with pytest.raises(InvalidRecordsError) as caught:
        check_batch_records(data, header, max_bytes=MIB, keys_required=True)
    assert [p.index for p in caught.value.problems] == list(range(0, 200, 2))


def test_record_count_must_match_the_records() -> None:
    data = encode_batch([(None, b"a", 0, None), (None, b"b", 0, None)])
    for count in (1, 3, 2**31 - 1):
        forged = _with_section(data, data[61:], count)
        header = read_batch_header(forged)
        assert header is not None
        with pytest.raises(InvalidRecordsError):
            check_batch_records(forged, header, max_bytes=MIB)


def test_a_header_key_length_overrunning_the_record_names_the_record() -> None:
    data = encode_batch([(None, b"a", 0, None), (None, b"b", 0, [("key", b"value")])])
    header = read_batch_header(data)
    assert header is not None
    broken = data.replace(encode_varint(3) + b"key", encode_varint(60) + b"key")
    header = read_batch_header(broken)
    assert header is not None
    with pytest.raises(InvalidRecordsError) as caught:
        check_batch_records(broken, header, max_bytes=MIB)
    assert caught.value.problems[0].index == 1
    assert "header key length 60" in caught.value.problems[0].message
