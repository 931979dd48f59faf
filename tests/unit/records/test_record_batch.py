import struct

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalite.errors import CorruptRecordError
from kafkalite.records import (
    BatchBuilder,
    RecordBatchBuilder,
    decode_batches,
    encode_batch,
    estimate_record_size,
    iter_batches,
)
from kafkalite.records.batch_header import read_batch_header

# baseOffset 0, length 58, leader epoch -1, magic 2, CRC-32C, attributes 0,
# lastOffsetDelta 0, base/max timestamp 1000, producer id -1, epoch -1, sequence -1, count 1,
# then one record: length 8, attributes 0, ts delta 0, offset delta 0, key "k", value "v",
# no headers.
GOLDEN_V2 = bytes.fromhex(
    "0000000000000000" "0000003a" "ffffffff" "02" "716a6189" "0000" "00000000"
    "00000000000003e8" "00000000000003e8" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
    "10" "00" "00" "00" "02" "6b" "02" "76" "00")


def test_golden_v2_batch() -> None:
    assert encode_batch([(b"k", b"v", 1000, [])]) == GOLDEN_V2
    assert crc32c.crc32c(GOLDEN_V2[21:]) == 0x716A6189
    (record,) = decode_batches(GOLDEN_V2)
    assert (record.offset, record.timestamp, record.key, record.value) == (0, 1000, b"k", b"v")
    assert record.headers == () and record.timestamp_type == 0


def _peer_batch(records: list, **producer: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=producer.get("transactional", 0),
        producer_id=producer.get("producer_id", -1),
        producer_epoch=producer.get("producer_epoch", -1),
        base_sequence=producer.get("base_sequence", -1), batch_size=1 << 30)
    for offset, (key, value, timestamp, headers) in enumerate(records):
        builder.append(offset, timestamp=timestamp, key=key, value=value, headers=headers)
    return bytes(builder.build())


SAMPLE = [
    (b"key", b"value", 1_700_000_000_000, []),
    (None, b"x" * 300, 1_700_000_000_500, [("trace", b"abc"), ("empty", None)]),
    (b"", None, 1_699_999_999_000, []),  # timestamp before the first: negative delta
    (b"k" * 20_000, b"v" * 70_000, 1_700_000_100_000, [("h\u00e9", b"\x00" * 200)]),
]


def test_uncompressed_batch_equals_kafka_python_byte_for_byte() -> None:
    ours = encode_batch(SAMPLE)
    assert ours != _peer_batch(SAMPLE)  # differs only in the leader epoch field
    builder = BatchBuilder(2, None, 1 << 30, partition_leader_epoch=0)
    for key, value, timestamp, headers in SAMPLE:
        assert builder.append(timestamp, key, value, headers)
    assert builder.build() == _peer_batch(SAMPLE)


def test_idempotent_and_transactional_fields_equal_kafka_python() -> None:
    builder = RecordBatchBuilder(producer_id=4242, producer_epoch=3, base_sequence=17,
                                 is_transactional=True, partition_leader_epoch=0)
    for key, value, timestamp, headers in SAMPLE[:2]:
        builder.append(timestamp, key, value, headers)
    peer = _peer_batch(SAMPLE[:2], producer_id=4242, producer_epoch=3, base_sequence=17,
                       transactional=1)
    assert builder.build() == peer
    (batch,) = iter_batches(peer)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 3, 17)
    assert batch.is_transactional and not batch.is_control


def test_header_fields_and_offsets() -> None:
    data = encode_batch(SAMPLE, compression="gzip", base_offset=100)
    header = read_batch_header(data)
    assert header is not None
    assert (header.base_offset, header.last_offset, header.record_count) == (100, 103, 4)
    assert header.max_timestamp == 1_700_000_100_000 and header.compression == 1
    assert struct.unpack_from(">q", data, 27)[0] == 1_700_000_000_000  # first timestamp
    records = list(decode_batches(data))
    assert [r.offset for r in records] == [100, 101, 102, 103]
    assert [r.timestamp for r in records] == [s[2] for s in SAMPLE]
    assert records[1].headers == (("trace", b"abc"), ("empty", None))
    assert records[3].headers == (("h\u00e9", b"\x00" * 200),)


def test_builder_full_semantics() -> None:
    builder = BatchBuilder(2, "lz4", batch_size=200)
    assert builder.append(1, None, b"x" * 500)  # the first record always fits
    assert not builder.append(2, None, b"y")
    assert builder.record_count == 1
    builder = BatchBuilder(2, None, batch_size=1000)
    appended = 0
    while builder.append(5, b"k", b"v" * 90):
        appended += 1
        assert builder.size_in_bytes <= 1000
    assert appended == builder.record_count == 9
    assert len(builder.build()) == builder.size_in_bytes
    assert builder.size_in_bytes + 100 > 1000


def test_estimate_record_size_bounds_a_single_record_batch() -> None:
    for key, value, timestamp, headers in SAMPLE:
        actual = len(encode_batch([(key, value, timestamp, headers)]))
        assert actual <= estimate_record_size(key, value, headers) <= actual + 21
        legacy = len(encode_batch([(key, value, timestamp, [])], magic=1))
        assert estimate_record_size(key, value, magic=1) == legacy


def test_empty_builder_builds_nothing() -> None:
    assert BatchBuilder(2).build() == b""
    assert encode_batch([]) == b""


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="magic"):
        BatchBuilder(3)
    with pytest.raises(TypeError, match="key"):
        BatchBuilder(2).append(1, "text", b"v")
    with pytest.raises(TypeError, match="value"):
        BatchBuilder(2).append(1, None, 12)


def _with_attributes(batch: bytes, attributes: int, max_timestamp: int | None = None) -> bytes:
    buf = bytearray(batch)
    struct.pack_into(">h", buf, 21, attributes)
    if max_timestamp is not None:
        struct.pack_into(">q", buf, 35, max_timestamp)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


@pytest.mark.parametrize("compression", [None, "snappy"])
def test_log_append_time_batches_give_records_the_max_timestamp(compression: str | None) -> None:
    data = encode_batch(SAMPLE, compression=compression)
    codec = data[22]
    stamped = _with_attributes(data, codec | 0x08, max_timestamp=1_800_000_000_000)
    records = list(decode_batches(stamped))
    assert {r.timestamp for r in records} == {1_800_000_000_000}
    assert {r.timestamp_type for r in records} == {1}


def test_control_batches_are_flagged() -> None:
    marker = encode_batch([(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5), 10, [])])
    control = _with_attributes(marker, 0x30)
    data = encode_batch(SAMPLE[:1]) + control
    batches = list(iter_batches(data))
    assert [b.is_control for b in batches] == [False, True]
    records = list(decode_batches(data))
    assert [r.batch.is_control for r in records] == [False, True]


def test_truncated_trailing_batch_is_skipped() -> None:
    first = encode_batch(SAMPLE[:2])
    second = encode_batch(SAMPLE[2:], base_offset=2)
    for cut in (1, 11, 30, 61, len(second) - 1):
        records = list(decode_batches(first + second[:cut]))
        assert [r.offset for r in records] == [0, 1]


def test_crc_mismatch_names_the_offset() -> None:
    data = bytearray(encode_batch(SAMPLE, base_offset=77))
    data[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="offset 77"):
        list(decode_batches(bytes(data)))
    assert len(list(decode_batches(bytes(data), check_crcs=False))) == 4


def _record_section_with_count(count: int) -> bytes:
    buf = bytearray(encode_batch(SAMPLE[:2]))
    struct.pack_into(">i", buf, 57, count)
    return bytes(buf)


@pytest.mark.parametrize("count", [1, 3, 2**31 - 1])
def test_record_count_mismatch_is_corrupt(count: int) -> None:
    with pytest.raises(CorruptRecordError):
        list(decode_batches(_record_section_with_count(count), check_crcs=False))


def test_negative_record_length_is_corrupt() -> None:
    buf = bytearray(encode_batch([(b"k", b"v", 1000, [])]))
    buf[61] = 0x03  # record length varint -2
    with pytest.raises(CorruptRecordError, match="record length"):
        list(decode_batches(bytes(buf), check_crcs=False))


def test_varint_overrun_is_corrupt() -> None:
    buf = bytearray(encode_batch([(b"k", b"v", 1000, [])]))
    buf[61:] = b"\xff" * (len(buf) - 61)
    with pytest.raises(CorruptRecordError):
        list(decode_batches(bytes(buf), check_crcs=False))


def test_raw_snappy_batch_as_librdkafka_writes_it() -> None:
    import snappy

    plain = encode_batch(SAMPLE)
    section = snappy.compress(plain[61:])  # one raw block, no xerial framing
    buf = bytearray(plain[:61] + section)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    data = _with_attributes(bytes(buf), 2)
    assert [r.value for r in decode_batches(data)] == [s[1] for s in SAMPLE]
