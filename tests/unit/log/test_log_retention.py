"""Retention: by time (injected clock) and size, log-start breach, HW guard, delayed delete."""

from __future__ import annotations

from pathlib import Path

from fake_clock import FakeClock as Clock
from log_batches import v2_batch

from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log

BATCH = len(v2_batch(2))
HOUR = 3_600_000


def _log(tmp_path: Path, clock: Clock, **config: object) -> Log:
    settings = {"segment_bytes": BATCH * 2, "file_delete_delay_ms": 0, **config}
    log = Log.open(tmp_path / "t-0", LogConfig(**settings), now_ms=clock)  # type: ignore[arg-type]
    for i in range(10):  # 5 segments of 2 batches; batch i stamped i hours after 0
        log.append_as_leader(v2_batch(2, timestamp=i * HOUR), leader_epoch=0)
    return log


def test_time_retention_deletes_old_closed_segments(tmp_path: Path) -> None:
    clock = Clock(5 * HOUR + 2)
    log = _log(tmp_path, clock, retention_ms=2 * HOUR)
    # segment k's largest timestamp is (2k + 1) hours + 1 ms; older than 2 h: k = 0, 1
    assert log.delete_old_segments(high_watermark=20) == 2
    assert [s.base_offset for s in log.segments] == [8, 12, 16]
    assert log.log_start_offset == 8
    assert not (tmp_path / "t-0" / f"{0:020d}.log").exists()


def test_the_active_segment_survives_any_retention(tmp_path: Path) -> None:
    clock = Clock(10**12)
    log = _log(tmp_path, clock, retention_ms=1)
    assert log.delete_old_segments(high_watermark=20) == 4
    assert [s.base_offset for s in log.segments] == [16]
    assert log.log_start_offset == 16 and log.log_end_offset == 20


def test_retention_never_passes_the_high_watermark(tmp_path: Path) -> None:
    log = _log(tmp_path, Clock(10**12), retention_ms=1)
    assert log.delete_old_segments(high_watermark=9) == 2  # segment 8..11 is not all below 9
    assert log.log_start_offset == 8


def test_size_retention_keeps_the_newest_bytes(tmp_path: Path) -> None:
    log = _log(tmp_path, Clock(0), retention_ms=-1, retention_bytes=BATCH * 5)
    # 10 batches, keep >= 5: drop whole oldest segments while 10 - 2k >= 5 still holds after
    assert log.delete_old_segments(high_watermark=20) == 2
    assert log.size_in_bytes == BATCH * 6


def test_compact_only_topics_skip_time_and_size(tmp_path: Path) -> None:
    log = _log(tmp_path, Clock(10**12), retention_ms=1, cleanup_policy="compact")
    assert log.delete_old_segments(high_watermark=20) == 0


def test_log_start_offset_breach_deletes_segments_below_it(tmp_path: Path) -> None:
    log = _log(tmp_path, Clock(0), retention_ms=-1)
    log.maybe_increment_log_start_offset(9)
    assert log.delete_old_segments(high_watermark=20) == 2
    assert log.segments[0].base_offset == 8
    assert log.log_start_offset == 9


def test_deleted_files_wait_for_the_delete_delay(tmp_path: Path) -> None:
    clock = Clock(10**12)
    log = _log(tmp_path, clock, retention_ms=1, file_delete_delay_ms=60_000)
    first = log.segments[0]
    region = first.read(0, 1 << 20)
    assert log.delete_old_segments(high_watermark=20) == 4
    directory = tmp_path / "t-0"
    assert (directory / f"{0:020d}.log.deleted").exists()
    assert region is not None and len(region.read_bytes()) == len(region)  # still readable
    clock.now += 60_000
    log.purge_deleted_segments()
    assert not any(p.name.endswith(".deleted") for p in directory.iterdir())
