import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkalite.errors import CorruptRecordError
from kafkalite.records.batch_header import (
    batch_crc_is_valid,
    iter_batch_headers,
    patch_v2_batch,
    read_batch_header,
)


def _peer_v2_batch(count: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=0, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=1_000 + i, key=b"k", value=b"v" * i, headers=[])
    return bytes(builder.build())


def test_v2_header_fields_and_truncated_tail() -> None:
    batch = _peer_v2_batch(3)
    headers = list(iter_batch_headers(batch + batch + batch[:40]))
    assert [h.position for h in headers] == [0, len(batch)]
    first = headers[0]
    assert (first.base_offset, first.last_offset, first.record_count) == (0, 2, 3)
    assert first.max_timestamp == 1_002 and first.magic == 2
    assert batch_crc_is_valid(batch, first)


def test_patching_offset_and_epoch_keeps_crc_valid() -> None:
    buf = bytearray(_peer_v2_batch(2))
    patch_v2_batch(buf, 0, 500, 7)
    header = read_batch_header(buf)
    assert header is not None
    assert (header.base_offset, header.last_offset, header.partition_leader_epoch) == (500, 501, 7)
    assert batch_crc_is_valid(buf, header)
    buf[-1] ^= 0xFF
    assert not batch_crc_is_valid(buf, header)


def test_legacy_message_headers() -> None:
    for magic in (0, 1):
        builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
        for i in range(2):
            builder.append(i, timestamp=5 if magic else None, key=None, value=b"x")
        data = bytes(builder.build())
        headers = list(iter_batch_headers(data))
        assert [h.last_offset for h in headers] == [0, 1]
        assert all(h.magic == magic and batch_crc_is_valid(data, h) for h in headers)
        assert headers[0].max_timestamp == (5 if magic else -1)


def test_impossible_headers_are_typed_errors() -> None:
    bad_magic = struct.pack(">qiib", 9, 50, 0, 7) + bytes(50)
    with pytest.raises(CorruptRecordError, match="unknown record magic 7"):
        read_batch_header(bad_magic)
    short_v2 = bytearray(_peer_v2_batch(1))
    struct.pack_into(">i", short_v2, 8, 3)
    with pytest.raises(CorruptRecordError, match="below the v2 minimum"):
        read_batch_header(short_v2)
