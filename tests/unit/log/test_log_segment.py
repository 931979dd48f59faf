"""LogSegment: Kafka's sparse index rule, reads by offset and size, truncation."""

from __future__ import annotations

from pathlib import Path

from log_batches import decode_offsets, v2_batch

from kafkalite.records.batch_header import patch_v2_batch
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.segment import LogSegment

BASE = 100


def _fill(segment: LogSegment, batches: int, records: int = 2, timestamp: int = 5_000) -> list[int]:
    """Append ``batches`` batches; returns each batch's start position."""
    positions = []
    offset = segment.next_offset
    for i in range(batches):
        batch = v2_batch(records, timestamp=timestamp + i * 10)
        patch_v2_batch(batch, 0, offset, 0)
        positions.append(segment.size)
        last = offset + records - 1
        segment.append(offset, last, timestamp + i * 10 + records - 1, last, batch)
        offset = last + 1
    return positions


def test_files_are_named_by_twenty_digit_base_offset(tmp_path: Path) -> None:
    LogSegment(tmp_path, BASE, LogConfig()).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000100.index", "00000000000000000100.log",
        "00000000000000000100.timeindex"]


def test_sparse_index_follows_kafkas_interval_rule(tmp_path: Path) -> None:
    batch_size = len(v2_batch(2))
    interval = batch_size * 2 + 1  # an entry after every third batch
    segment = LogSegment(tmp_path, BASE, LogConfig(index_interval_bytes=interval))
    positions = _fill(segment, 10)
    entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    # the counter is checked before a batch is counted: 3 batches (3S > 2S+1) since the
    # last entry, so entries go to batches 3, 6, 9, each (relative LAST offset, START pos)
    assert entries == [(2 * k + 1, positions[k]) for k in (3, 6, 9)]
    assert segment.offset_index.lookup(BASE) == (BASE, 0)  # first batch never indexed
    times = [segment.time_index.entry(i) for i in range(segment.time_index.entries)]
    assert times == [(5_000 + 10 * k + 1, 2 * k + 1) for k in (3, 6, 9)]


def test_read_returns_whole_batches_within_max_bytes(tmp_path: Path) -> None:
    segment = LogSegment(tmp_path, BASE, LogConfig(index_interval_bytes=100))
    positions = _fill(segment, 20)
    size = positions[1]
    for offset in range(BASE, BASE + 40):
        region = segment.read(offset, size * 3)
        assert region is not None
        batch_start = (offset - BASE) // 2
        assert region.position == positions[batch_start]
        offsets = decode_offsets(region.read_bytes())
        assert offsets[0] == BASE + 2 * batch_start
        assert len(offsets) == 2 * min(3, 20 - batch_start)
    assert segment.read(BASE + 40, 1_000) is None


def test_read_min_one_batch_and_max_position(tmp_path: Path) -> None:
    segment = LogSegment(tmp_path, BASE, LogConfig())
    positions = _fill(segment, 5)
    region = segment.read(BASE + 2, 10)
    assert region is not None and region.position == positions[1]
    assert len(region) == positions[2] - positions[1]
    assert segment.read(BASE + 2, 10, min_one_batch=False) is None
    capped = segment.read(BASE, 10_000, max_position=positions[3])
    assert capped is not None and decode_offsets(capped.read_bytes()) == list(
        range(BASE, BASE + 6))


def test_find_offset_by_timestamp_uses_index_then_scan(tmp_path: Path) -> None:
    segment = LogSegment(tmp_path, BASE, LogConfig(index_interval_bytes=1))
    _fill(segment, 10)
    # batch k holds timestamps 5000+10k and 5000+10k+1
    for target, batch in ((5_041, 4), (5_042, 5), (4_000, 0)):
        found = segment.find_offset_by_timestamp(target, BASE)
        assert found is not None and found[1].base_offset == BASE + 2 * batch
    found = segment.find_offset_by_timestamp(4_000, BASE + 7)
    assert found is not None and found[1].base_offset == BASE + 6
    assert segment.find_offset_by_timestamp(10**12, BASE) is None


def test_truncate_to_cuts_the_batch_holding_the_offset(tmp_path: Path) -> None:
    segment = LogSegment(tmp_path, BASE, LogConfig(index_interval_bytes=1))
    positions = _fill(segment, 10)
    removed = segment.truncate_to(BASE + 9)
    assert segment.size == positions[4]
    assert removed == positions[-1] + positions[1] - positions[4]
    assert segment.next_offset == BASE + 8
    assert segment.offset_index.last_offset < BASE + 8
    assert segment.time_index.last_entry[1] < BASE + 8
    segment.sanity_check()


def test_reopen_restores_next_offset_and_max_timestamp(tmp_path: Path) -> None:
    config = LogConfig(index_interval_bytes=300)
    segment = LogSegment(tmp_path, BASE, config)
    _fill(segment, 7)
    segment.close()
    reopened = LogSegment(tmp_path, BASE, config)
    assert reopened.next_offset == BASE + 14
    assert reopened.max_timestamp_so_far == 5_000 + 60 + 1
    assert reopened.first_batch_timestamp == 5_001
    reopened.sanity_check()


def test_read_lengths_match_a_brute_force_batch_walk(tmp_path: Path) -> None:
    segment = LogSegment(tmp_path, BASE, LogConfig(index_interval_bytes=150))
    positions = _fill(segment, 25)
    ends = [*positions[1:], segment.size]
    for first_batch in range(0, 25, 3):
        start = positions[first_batch]
        for max_bytes in (1, 100, 113, 226, 500, 1_000, 2_000, 10_000):
            fitting = [end for end in ends[first_batch:] if end - start <= max_bytes]
            expected = (fitting[-1] if fitting else ends[first_batch]) - start
            region = segment.read(BASE + 2 * first_batch, max_bytes)
            assert region is not None and (region.position, len(region)) == (start, expected)
