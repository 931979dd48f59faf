import struct
import zlib

import pytest

from kafkalite.errors import CorruptRecordError
from kafkalite.records import (
    BatchBuilder,
    assign_legacy_offsets,
    compress,
    decode_batches,
    decompress,
    encode_batch,
    iter_batches,
)
from kafkalite.records.legacy_messages import encode_message, read_message

# offset 0, size 24, CRC-32, magic 1, attributes 0, timestamp 1000, key null, value "hi"
GOLDEN_V1 = bytes.fromhex(
    "0000000000000000" "00000018" "06614b6d" "01" "00" "00000000000003e8" "ffffffff"
    "00000002" "6869")

RECORDS = [(b"a", b"first", 5_000, []), (None, b"second", 7_000, []), (b"c", None, 6_000, [])]


def test_golden_v1_message() -> None:
    assert encode_batch([(None, b"hi", 1000, [])], magic=1) == GOLDEN_V1
    assert zlib.crc32(GOLDEN_V1[16:]) == 0x06614B6D
    (record,) = decode_batches(GOLDEN_V1)
    assert (record.offset, record.timestamp, record.key, record.value) == (0, 1000, None, b"hi")
    assert record.timestamp_type == 0 and record.batch.magic == 1


def test_v0_messages_have_no_timestamp() -> None:
    records = list(decode_batches(encode_batch(RECORDS, magic=0, base_offset=3)))
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in records] == [
        (3, -1, -1), (4, -1, -1), (5, -1, -1)]


def _inner(wrapper: bytes) -> list:
    message = read_message(wrapper, 0)
    inner = decompress(message.compression, message.value, magic=message.magic)
    out, pos = [], 0
    while pos < len(inner):
        inner_message = read_message(inner, pos)
        out.append(inner_message)
        pos += inner_message.size
    return [message, *out]


def test_v1_wrapper_has_relative_inner_offsets_and_max_timestamp() -> None:
    data = encode_batch(RECORDS, magic=1, compression="gzip", base_offset=40)
    (batch,) = iter_batches(data)
    wrapper, *inner = _inner(data)
    assert [m.offset for m in inner] == [0, 1, 2]
    assert wrapper.offset == 42 and wrapper.timestamp == 7_000 and wrapper.key is None
    assert batch.compression == 1
    records = list(decode_batches(data))
    assert [(r.offset, r.timestamp, r.value) for r in records] == [
        (40, 5_000, b"first"), (41, 7_000, b"second"), (42, 6_000, None)]


def test_v0_wrapper_has_absolute_inner_offsets() -> None:
    data = encode_batch(RECORDS, magic=0, compression="snappy", base_offset=40)
    wrapper, *inner = _inner(data)
    assert [m.offset for m in inner] == [40, 41, 42] and wrapper.offset == 42
    assert [r.offset for r in decode_batches(data)] == [40, 41, 42]


def _wrapper(magic: int, offset: int, inner_offsets: list[int], attributes: int = 1,
             timestamp: int = 9_999) -> bytes:
    inner = b"".join(encode_message(o, magic, 0, 100 + i, None, b"v%d" % i)
                     for i, o in enumerate(inner_offsets))
    return encode_message(offset, magic, attributes, timestamp, None,
                          compress(attributes & 7, inner, magic=magic))


def test_v1_wrapper_offset_zero_means_inner_offsets_count_from_zero() -> None:
    data = _wrapper(1, 0, [0, 1, 2])
    assert [r.offset for r in decode_batches(data)] == [0, 1, 2]


def test_v1_wrapper_offset_below_last_inner_offset_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="below"):
        list(decode_batches(_wrapper(1, 1, [0, 1, 2])))


def test_v1_log_append_time_wrapper_stamps_inner_records() -> None:
    data = _wrapper(1, 10, [0, 1], attributes=1 | 0x08, timestamp=123_456)
    records = list(decode_batches(data))
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in records] == [
        (9, 123_456, 1), (10, 123_456, 1)]


def test_wrapper_checks_inner_crcs() -> None:
    inner = bytearray(encode_message(0, 1, 0, 5, None, b"payload"))
    inner[-1] ^= 0xFF
    data = encode_message(0, 1, 1, 5, None, compress("gzip", bytes(inner), magic=1))
    with pytest.raises(CorruptRecordError, match="inner message CRC"):
        list(decode_batches(data))
    assert [r.value for r in decode_batches(data, check_crcs=False)] == [b"payloa" + bytes([ord("d") ^ 0xFF])]


def test_nested_compression_is_corrupt() -> None:
    inner = _wrapper(1, 0, [0])
    data = encode_message(0, 1, 1, 5, None, compress("gzip", inner, magic=1))
    with pytest.raises(CorruptRecordError, match="uncompressed"):
        list(decode_batches(data))


def test_mixed_formats_in_one_buffer() -> None:
    data = (encode_batch(RECORDS[:1], magic=0) + encode_batch(RECORDS[1:], magic=1,
            compression="lz4", base_offset=1) + encode_batch(RECORDS, base_offset=3))
    assert [(r.offset, r.batch.magic) for r in decode_batches(data)] == [
        (0, 0), (1, 1), (2, 1), (3, 2), (4, 2), (5, 2)]


def test_legacy_builder_rejects_headers_and_zstd() -> None:
    with pytest.raises(ValueError, match="headers"):
        BatchBuilder(1).append(1, None, b"v", [("h", b"x")])
    with pytest.raises(Exception, match="zstd"):
        BatchBuilder(0, "zstd")
    with pytest.raises(ValueError, match="magic 2"):
        BatchBuilder(1, producer_id=7, producer_epoch=0, base_sequence=0)
    assert BatchBuilder(1, producer_id=-1, partition_leader_epoch=0).append(1, None, b"v")


def test_legacy_builder_full_semantics() -> None:
    builder = BatchBuilder(1, "gzip", batch_size=100)
    assert builder.append(1, None, b"x" * 200)
    assert not builder.append(2, None, b"y")
    builder = BatchBuilder(0, None, batch_size=100)
    while builder.append(1, None, b"x" * 10):
        pass
    assert builder.record_count == 100 // (12 + 14 + 10) and len(builder.build()) == builder.size_in_bytes


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("compression", [None, "gzip", "lz4"])
def test_assign_legacy_offsets(magic: int, compression: str | None) -> None:
    produced = encode_batch(RECORDS, magic=magic, compression=compression)
    stamped, last = assign_legacy_offsets(produced, 1_000)
    assert last == 1_002
    records = list(decode_batches(stamped))
    assert [(r.offset, r.value) for r in records] == [
        (1_000, b"first"), (1_001, b"second"), (1_002, None)]
    (header_offset,) = struct.unpack_from(">q", stamped, 0)
    if compression is None:
        assert header_offset == 1_000
    else:
        assert header_offset == 1_002
        _wrapper_message, *inner = _inner(stamped)
        assert [m.offset for m in inner] == ([0, 1, 2] if magic else [1_000, 1_001, 1_002])
        if magic == 1:  # only the wrapper offset changed
            assert stamped[8:] == produced[8:]


def test_assign_legacy_offsets_over_several_entries_and_odd_inner_offsets() -> None:
    produced = _wrapper(1, 0, [5, 6]) + encode_batch(RECORDS[:1], magic=1)
    stamped, last = assign_legacy_offsets(produced, 10)
    assert last == 12
    assert [r.offset for r in decode_batches(stamped)] == [10, 11, 12]
    _wrapper_message, *inner = _inner(stamped)
    assert [m.offset for m in inner] == [0, 1]


def test_assign_legacy_offsets_rejects_corruption() -> None:
    produced = bytearray(encode_batch(RECORDS, magic=1, compression="gzip"))
    produced[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC"):
        assign_legacy_offsets(bytes(produced), 0)
    with pytest.raises(CorruptRecordError):
        assign_legacy_offsets(encode_batch(RECORDS, magic=1)[:-3], 0)
    assert assign_legacy_offsets(b"", 7) == (b"", 6)


@pytest.mark.parametrize("cut", range(1, 26))
def test_truncated_trailing_legacy_message_is_skipped(cut: int) -> None:
    first = encode_batch(RECORDS[:1], magic=1)
    data = first + encode_batch(RECORDS[1:2], magic=1, base_offset=1)[:cut]
    assert [r.offset for r in decode_batches(data)] == [0]
