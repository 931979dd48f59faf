"""Leader epoch cache rules (Kafka's LeaderEpochFileCache), persisted as a checkpoint."""

from __future__ import annotations

from pathlib import Path

from kafkalite_server.log.checkpoint import LeaderEpochCheckpointFile
from kafkalite_server.log.leader_epoch import LeaderEpochCache


def _cache(tmp_path: Path, entries: list[tuple[int, int]]) -> LeaderEpochCache:
    return LeaderEpochCache(LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint"),
                            entries)


def test_assign_removes_entries_that_break_the_order(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(0, 0), (2, 10), (5, 20)])
    cache.assign(5, 30)  # the latest epoch again: no change
    cache.assign(4, 15)  # drops entries with epoch >= 4 or start >= 15: only (5, 20)
    assert cache.entries == [(0, 0), (2, 10), (4, 15)]
    cache.assign(6, 12)  # start 15 >= 12 goes
    assert cache.entries == [(0, 0), (2, 10), (6, 12)]
    assert LeaderEpochCheckpointFile(cache.checkpoint.path).read() == cache.entries


def test_truncation_from_both_ends(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(0, 0), (2, 10), (5, 20)])
    cache.truncate_from_start(12)
    assert cache.entries == [(2, 12), (5, 20)]
    cache.truncate_from_start(20)
    assert cache.entries == [(5, 20)]
    cache = _cache(tmp_path, [(0, 0), (2, 10), (5, 20)])
    cache.truncate_from_end(20)
    assert cache.entries == [(0, 0), (2, 10)]
    cache.truncate_from_end(5)
    assert cache.entries == [(0, 0)]


def test_end_offsets(tmp_path: Path) -> None:
    cache = _cache(tmp_path, [(1, 5), (3, 10)])
    assert cache.end_offset_for(3, 42) == (3, 42)
    assert cache.end_offset_for(2, 42) == (1, 10)
    assert cache.end_offset_for(0, 42) == (0, 5)
    assert cache.end_offset_for(4, 42) == (-1, -1)
    assert cache.end_offset_for(-1, 42) == (-1, -1)
    assert _cache(tmp_path, []).end_offset_for(0, 0) == (-1, -1)
