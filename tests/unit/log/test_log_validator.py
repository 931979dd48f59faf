"""Produce validation: each rejection with its Kafka error, offsets, LogAppendTime, legacy."""

from __future__ import annotations

import struct

import crc32c
import pytest
from kafka.record.memory_records import MemoryRecords
from log_batches import legacy_messages, v2_batch

from kafkalite.protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    MessageTooLargeError,
    UnsupportedCompressionTypeError,
)
from kafkalite.records.batch_header import iter_batch_headers
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.validator import assign_offsets, validate_records

CONFIG = LogConfig()


def _recrc(batch: bytearray) -> bytearray:
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return batch


def test_valid_batch_passes() -> None:
    headers = validate_records(v2_batch(3), 8, CONFIG)
    assert [(h.magic, h.record_count) for h in headers] == [(2, 3)]


def test_crc_mismatch_is_corrupt_message() -> None:
    batch = v2_batch(3)
    batch[-1] ^= 1
    with pytest.raises(CorruptMessageError) as caught:
        validate_records(batch, 8, CONFIG)
    assert caught.value.errno == 2


@pytest.mark.parametrize("cut", [1, 30, 70])
def test_truncated_entry_is_corrupt_message(cut: int) -> None:
    batch = v2_batch(3)
    with pytest.raises(CorruptMessageError, match="truncated"):
        validate_records(batch[:-cut], 8, CONFIG)


def test_garbage_magic_is_corrupt_message() -> None:
    batch = v2_batch(1)
    batch[16] = 9
    with pytest.raises(CorruptMessageError, match="magic"):
        validate_records(batch, 8, CONFIG)


def test_v3_plus_needs_exactly_one_v2_batch() -> None:
    with pytest.raises(InvalidRecordError) as caught:
        validate_records(v2_batch(1) + v2_batch(1), 3, CONFIG)
    assert caught.value.errno == 87
    with pytest.raises(InvalidRecordError):
        validate_records(legacy_messages(1), 3, CONFIG)
    with pytest.raises(InvalidRecordError):
        validate_records(bytearray(), 8, CONFIG)
    assert len(validate_records(v2_batch(1) + v2_batch(1), 2, CONFIG)) == 2


def test_zstd_needs_produce_v7() -> None:
    batch = v2_batch(3, compression=4)
    assert validate_records(batch, 7, CONFIG)
    with pytest.raises(UnsupportedCompressionTypeError) as caught:
        validate_records(batch, 6, CONFIG)
    assert caught.value.errno == 76


def test_oversized_batch_is_message_too_large() -> None:
    batch = v2_batch(3, value_size=500)
    with pytest.raises(MessageTooLargeError) as caught:
        validate_records(batch, 8, LogConfig(max_message_bytes=len(batch) - 1))
    assert caught.value.errno == 10
    assert validate_records(batch, 8, LogConfig(max_message_bytes=len(batch)))


def test_empty_or_inconsistent_record_count_is_invalid() -> None:
    batch = v2_batch(3)
    struct.pack_into(">i", batch, 57, 0)
    with pytest.raises(InvalidRecordError, match="counts 0 records"):
        validate_records(_recrc(batch), 8, CONFIG)


def test_control_batches_from_clients_are_invalid() -> None:
    batch = v2_batch(1)
    struct.pack_into(">h", batch, 21, 0x20)
    with pytest.raises(InvalidRecordError, match="control"):
        validate_records(_recrc(batch), 8, CONFIG)


def test_log_append_time_rewrite_keeps_the_batch_valid() -> None:
    records = v2_batch(4, timestamp=123, compression=1)
    config = LogConfig(message_timestamp_type="LogAppendTime")
    headers = validate_records(records, 8, config)
    assigned = assign_offsets(records, headers, 500, 7, config, now_ms=1_234_567)
    assert (assigned.first_offset, assigned.last_offset) == (500, 503)
    assert assigned.log_append_time_ms == assigned.max_timestamp == 1_234_567
    batch = MemoryRecords(bytes(assigned.data)).next_batch()
    assert batch.validate_crc()
    assert batch.timestamp_type == 1 and batch.leader_epoch == 7
    assert [(r.offset, r.timestamp) for r in batch] == [(500 + i, 1_234_567) for i in range(4)]
    assert validate_records(assigned.data, 8, config)  # our own check agrees


@pytest.mark.parametrize(("magic", "compression"), [(0, 0), (1, 0), (1, 1), (0, 2), (1, 3)])
def test_legacy_message_sets_get_consecutive_offsets(magic: int, compression: int) -> None:
    records = legacy_messages(3, magic=magic, compression=compression)
    headers = validate_records(records, 2, CONFIG)
    assigned = assign_offsets(records, headers, 40, 0, CONFIG, now_ms=0)
    assert (assigned.first_offset, assigned.last_offset, assigned.record_count) == (40, 42, 3)
    decoded = MemoryRecords(bytes(assigned.data))
    offsets = []
    while (batch := decoded.next_batch()) is not None:
        offsets.extend(r.offset for r in batch)
    assert offsets == [40, 41, 42]
    assert all(h.last_offset <= 42 for h in iter_batch_headers(assigned.data))


def test_legacy_v1_log_append_time_rewrite() -> None:
    records = legacy_messages(2, magic=1)
    config = LogConfig(message_timestamp_type="LogAppendTime")
    assigned = assign_offsets(records, validate_records(records, 2, config), 0, 0, config, 99)
    decoded = MemoryRecords(bytes(assigned.data))
    batch = decoded.next_batch()
    assert batch.magic == 2 and batch.timestamp_type == 1
    assert batch.validate_crc() and [r.timestamp for r in batch] == [99, 99]


@pytest.mark.parametrize("compression", [0, 1])
def test_legacy_magic_0_up_converts_without_timestamps(compression: int) -> None:
    records = legacy_messages(2, magic=0, compression=compression)
    assigned = assign_offsets(records, validate_records(records, 1, CONFIG), 5, 0, CONFIG, 99)
    batch = MemoryRecords(bytes(assigned.data)).next_batch()
    assert (batch.magic, batch.compression_type) == (2, compression)
    assert [(r.offset, r.timestamp) for r in batch] == [(5, -1), (6, -1)]


def test_mixed_formats_are_invalid() -> None:
    with pytest.raises(InvalidRecordError, match="mix"):
        validate_records(legacy_messages(1) + v2_batch(1), 2, CONFIG)
