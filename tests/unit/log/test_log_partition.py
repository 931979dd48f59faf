"""Log: appends with offset assignment, rolling, reads at every offset, ranges, epochs."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_clock import FakeClock as Clock
from kafka.record.memory_records import MemoryRecords
from log_batches import decode_offsets, v2_batch

from kafkalite.protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from kafkalite.records.batch_header import iter_batch_headers
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log, parse_log_dir_name


def _open(tmp_path: Path, **config: object) -> Log:
    return Log.open(tmp_path / "orders-0", LogConfig(**config), now_ms=Clock(1_700_000_000_000))  # type: ignore[arg-type]


def _append_many(log: Log, batches: int, records: int = 3, epoch: int = 0) -> None:
    for i in range(batches):
        log.append_as_leader(v2_batch(records, timestamp=10_000 + 100 * i), leader_epoch=epoch)


def test_offsets_are_assigned_consecutively_and_stamped(tmp_path: Path) -> None:
    log = _open(tmp_path)
    infos = [log.append_as_leader(v2_batch(n), leader_epoch=4) for n in (1, 5, 2)]
    assert [(i.first_offset, i.last_offset, i.record_count) for i in infos] == [
        (0, 0, 1), (1, 5, 5), (6, 7, 2)]
    assert infos[0].log_append_time_ms == -1 and not infos[0].duplicate
    assert log.log_end_offset == 8
    region = log.read(0, 1 << 20)
    assert region is not None
    data = region.read_bytes()
    assert decode_offsets(data) == list(range(8))
    assert {h.partition_leader_epoch for h in iter_batch_headers(data)} == {4}


def test_rolls_on_segment_bytes_and_reads_back_every_offset(tmp_path: Path) -> None:
    batch_size = len(v2_batch(3))
    log = _open(tmp_path, segment_bytes=batch_size * 4, index_interval_bytes=batch_size)
    _append_many(log, 30)
    assert [s.base_offset for s in log.segments] == list(range(0, 90, 12))
    assert all(s.size <= batch_size * 4 for s in log.segments)
    for offset in range(90):
        region = log.read(offset, batch_size * 2)
        assert region is not None
        offsets = decode_offsets(region.read_bytes())
        assert offsets[0] == offset - offset % 3  # starts at the batch holding the offset
        assert offset in offsets and len(offsets) in (3, 6)


def test_read_with_max_bytes_and_min_one_batch(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _append_many(log, 5, records=10)
    one = log.read(10, 5)
    assert one is not None and decode_offsets(one.read_bytes()) == list(range(10, 20))
    assert log.read(10, 5, min_one_batch=False) is None
    everything = log.read(0, 1 << 20)
    assert everything is not None and decode_offsets(everything.read_bytes()) == list(range(50))


def test_read_never_passes_the_high_watermark(tmp_path: Path) -> None:
    batch_size = len(v2_batch(3))
    log = _open(tmp_path, segment_bytes=batch_size * 2)
    _append_many(log, 10)
    region = log.read(0, 1 << 20, max_offset=9)
    assert region is not None and decode_offsets(region.read_bytes()) == list(range(6))
    region = log.read(6, 1 << 20, max_offset=9)
    assert region is not None and decode_offsets(region.read_bytes()) == [6, 7, 8]
    assert log.read(9, 1 << 20, max_offset=9) is None
    assert log.read(12, 1 << 20, max_offset=9) is None


def test_out_of_range_and_log_end(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _append_many(log, 2)
    assert log.read(6, 100) is None
    with pytest.raises(OffsetOutOfRangeError):
        log.read(7, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_batch_larger_than_a_segment_is_rejected(tmp_path: Path) -> None:
    log = _open(tmp_path, segment_bytes=100)
    with pytest.raises(RecordListTooLargeError):
        log.append_as_leader(v2_batch(5), leader_epoch=0)


def test_log_append_time_is_reported_and_stored(tmp_path: Path) -> None:
    log = _open(tmp_path, message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(v2_batch(3, timestamp=5), leader_epoch=0)
    assert info.log_append_time_ms == 1_700_000_000_000
    region = log.read(0, 1 << 20)
    assert region is not None
    batch = MemoryRecords(region.read_bytes()).next_batch()
    assert batch.validate_crc() and batch.timestamp_type == 1
    assert [r.timestamp for r in batch] == [1_700_000_000_000] * 3


def test_offset_for_timestamp_finds_the_first_record(tmp_path: Path) -> None:
    batch_size = len(v2_batch(3))
    log = _open(tmp_path, segment_bytes=batch_size * 3, index_interval_bytes=1)
    _append_many(log, 12)  # batch i: timestamps 10_000 + 100 i + (0, 1, 2)
    assert log.offset_for_timestamp(0) == (0, 10_000)
    assert log.offset_for_timestamp(10_501) == (16, 10_501)
    assert log.offset_for_timestamp(10_503) == (18, 10_600)
    assert log.offset_for_timestamp(11_102) == (35, 11_102)
    assert log.offset_for_timestamp(11_103) is None


def test_leader_epochs_are_cached_and_answer_end_offsets(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _append_many(log, 2, epoch=1)  # 0..5
    _append_many(log, 1, epoch=3)  # 6..8
    assert log.leader_epoch_cache.entries == [(1, 0), (3, 6)]
    assert log.end_offset_for_epoch(1) == (1, 6)
    assert log.end_offset_for_epoch(2) == (1, 6)
    assert log.end_offset_for_epoch(3) == (3, 9)
    assert log.end_offset_for_epoch(0) == (0, 0)
    assert log.end_offset_for_epoch(7) == (-1, -1)
    checkpoint = (tmp_path / "orders-0" / "leader-epoch-checkpoint").read_text()
    assert checkpoint == "0\n2\n1 0\n3 6\n"


def test_truncate_to_removes_later_batches_and_segments(tmp_path: Path) -> None:
    batch_size = len(v2_batch(3))
    log = _open(tmp_path, segment_bytes=batch_size * 2)
    _append_many(log, 3, epoch=1)
    _append_many(log, 3, epoch=2)  # 9..17, epoch 2 starts at 9
    log.truncate_to(7)
    assert log.log_end_offset == 6
    assert log.leader_epoch_cache.entries == [(1, 0)]
    assert [s.base_offset for s in log.segments] == [0, 6]
    log.append_as_leader(v2_batch(1), leader_epoch=3)
    region = log.read(6, 1 << 20)  # a read stays within one segment, as in Kafka
    assert region is not None and decode_offsets(region.read_bytes()) == [6]


def test_flush_advances_the_recovery_point(tmp_path: Path) -> None:
    log = _open(tmp_path, flush_messages=4)
    log.append_as_leader(v2_batch(3), leader_epoch=0)
    assert log.recovery_point == 0
    log.append_as_leader(v2_batch(3), leader_epoch=0)
    assert log.recovery_point == 6
    log.append_as_leader(v2_batch(1), leader_epoch=0)
    log.flush(up_to_offset=100)
    assert log.recovery_point == 7


def test_directory_names_split_at_the_last_dash() -> None:
    assert parse_log_dir_name("my-topic-name-12") == ("my-topic-name", 12)
    for bad in ("nodash", "topic-", "-3", "topic-x"):
        with pytest.raises(ValueError):
            parse_log_dir_name(bad)


def test_follower_append_keeps_the_leaders_offsets_and_epochs(tmp_path: Path) -> None:
    leader = Log.open(tmp_path / "leader-0", LogConfig())
    _append_many(leader, 2, epoch=1)
    _append_many(leader, 2, epoch=4)
    region = leader.read(0, 1 << 20)
    assert region is not None
    fetched = bytearray(region.read_bytes())
    follower = Log.open(tmp_path / "follower-0", LogConfig())
    info = follower.append_as_follower(fetched)
    assert info is not None and (info.first_offset, info.last_offset) == (0, 11)
    assert follower.leader_epoch_cache.entries == [(1, 0), (4, 6)]
    copy = follower.read(0, 1 << 20)
    assert copy is not None and copy.read_bytes() == bytes(fetched)
    with pytest.raises(InvalidRecordError, match="do not follow"):
        follower.append_as_follower(fetched)  # offsets already present
    fetched[-1] ^= 1
    with pytest.raises(CorruptMessageError):
        Log.open(tmp_path / "other-0", LogConfig()).append_as_follower(fetched)
    assert follower.append_as_follower(bytearray()) is None
