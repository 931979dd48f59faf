"""kafka-python's record builders and readers as an independent oracle, both directions."""

import importlib.util

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafkalite.records import decode_batches, encode_batch

CODECS = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CASES = [(magic, codec) for magic in (0, 1, 2) for codec in CODECS
         if not (codec == "zstd" and magic < 2)]
# kafka-python needs the optional xxhash package for magic-0 lz4 (the KAFKA-3160 checksum)
HAS_XXHASH = importlib.util.find_spec("xxhash") is not None


def _records(magic: int) -> list:
    out = []
    for i in range(50):
        headers = [("n", b"%d" % i), ("null", None)] if magic == 2 and i % 3 else []
        key = None if i % 4 == 0 else b"key-%d" % i
        value = None if i % 7 == 6 else b"value-%d-" % i + b"x" * (i * 37)
        out.append((key, value, 1_600_000_000_000 + i * 13, headers))
    return out


def _peer_encode(records: list, magic: int, codec: int) -> bytes:
    if magic == 2:
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
        for offset, (key, value, timestamp, headers) in enumerate(records):
            builder.append(offset, timestamp=timestamp, key=key, value=value, headers=headers)
    else:
        builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec,
                                           batch_size=1 << 30)
        for offset, (key, value, timestamp, _headers) in enumerate(records):
            builder.append(offset, timestamp=timestamp, key=key, value=value)
    return bytes(builder.build())


def _peer_decode(data: bytes) -> list:
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        for record in batch:
            out.append((record.offset, record.timestamp if batch.magic else -1, record.key,
                        record.value, list(record.headers)))
    return out


def _expected(records: list, magic: int, base_offset: int = 0) -> list:
    return [(base_offset + i, timestamp if magic else -1, key, value, list(headers))
            for i, (key, value, timestamp, headers) in enumerate(records)]


def _skip_without_xxhash(magic: int, codec: str | None) -> None:
    if magic == 0 and codec == "lz4" and not HAS_XXHASH:
        pytest.skip("kafka-python needs xxhash for magic-0 lz4")


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_kafka_python_reads_what_we_encode(magic: int, codec: str | None) -> None:
    _skip_without_xxhash(magic, codec)
    records = _records(magic)
    data = encode_batch(records, magic=magic, compression=codec)
    assert _peer_decode(data) == _expected(records, magic)


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_we_read_what_kafka_python_encodes(magic: int, codec: str | None) -> None:
    _skip_without_xxhash(magic, codec)
    records = _records(magic)
    data = _peer_encode(records, magic, CODECS[codec])
    decoded = [(r.offset, r.timestamp, r.key, r.value, list(r.headers))
               for r in decode_batches(data)]
    assert decoded == _expected(records, magic)


def test_kafka_python_reads_a_fetch_like_mix_of_batches() -> None:
    parts, expected, offset = [], [], 0
    for magic, codec in CASES:
        if magic == 0 and codec == "lz4":
            continue
        records = _records(magic)[:5]
        parts.append(encode_batch(records, magic=magic, compression=codec, base_offset=offset))
        expected += _expected(records, magic, offset)
        offset += len(records)
    assert _peer_decode(b"".join(parts)) == expected
