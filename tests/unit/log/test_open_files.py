"""Bounded open files: the LRU cache of descriptors, lazy segments, and running out of
descriptors as a request's error (never a disk failure), on real files."""

from __future__ import annotations

import dataclasses
import errno
import os
from pathlib import Path

import pytest
from log_batches import decode_offsets, v2_batch

from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.log.open_files import (
    CachedFile,
    OpenFileCache,
    TooManyOpenFilesError,
)

BATCH = len(v2_batch(3))
CONFIG = LogConfig(segment_bytes=BATCH * 2, index_interval_bytes=1, file_delete_delay_ms=0)


def _open_descriptors_under(directory: Path) -> int:
    """This process's descriptors open on files below ``directory`` (from /proc)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            count += 1
    return count


def _files(directory: Path, cache: OpenFileCache, count: int) -> list[CachedFile]:
    files = []
    for n in range(count):
        path = directory / f"f{n}"
        path.write_bytes(b"%d" % n)
        files.append(CachedFile(cache, path, create=False))
    return files


def test_the_cache_holds_at_most_its_capacity_least_recently_used_first_out(
        tmp_path: Path) -> None:
    cache = OpenFileCache(3)
    files = _files(tmp_path, cache, 10)
    for n, file in enumerate(files):
        assert file.pread(10, 0) == b"%d" % n
    assert len(cache) == 3 and _open_descriptors_under(tmp_path) == 3
    opens = cache.opens
    files[8].pread(1, 0)  # still cached: no open
    assert cache.opens == opens
    files[0].pread(1, 0)  # evicted long ago: reopened, and 7 (least recently used) goes
    assert cache.opens == opens + 1 and _open_descriptors_under(tmp_path) == 3
    cache.close_all()
    assert _open_descriptors_under(tmp_path) == 0


def test_an_evicted_or_forgotten_handle_stays_open_while_someone_holds_it(
        tmp_path: Path) -> None:
    cache = OpenFileCache(1)
    first, second = _files(tmp_path, cache, 2)
    held = first.handle()  # a fetch response's region holds it
    second.pread(1, 0)  # evicts first from the cache
    first.unlink()  # even deleted (retention)
    assert os.pread(held.fileno(), 1, 0) == b"0"
    assert _open_descriptors_under(tmp_path) == 2
    del held
    assert _open_descriptors_under(tmp_path) == 1


def test_out_of_descriptors_gives_back_half_the_cache_then_names_the_limits(
        tmp_path: Path) -> None:
    failures = [errno.EMFILE]

    def opener(path: Path, flags: int) -> int:
        if failures:
            raise OSError(failures.pop(), os.strerror(errno.EMFILE), str(path))
        return os.open(path, flags)

    cache = OpenFileCache(8)
    files = _files(tmp_path, cache, 5)
    for file in files[:4]:
        file.pread(1, 0)
    cache.opener = opener
    assert files[4].pread(1, 0) == b"4"  # EMFILE once: 3 of 4 given back, then opened
    assert len(cache) == 2

    failures[:] = [errno.ENFILE, errno.EMFILE]
    with pytest.raises(TooManyOpenFilesError, match=r"f0: .*RLIMIT_NOFILE.*"
                       r"kafkalite\.log\.open\.files\.max") as raised:
        files[0].pread(1, 0)
    assert isinstance(raised.value, KafkaStorageError)  # KAFKA_STORAGE_ERROR, retriable


def _all_offsets(log: Log) -> list[int]:
    offsets: list[int] = []
    position = log.log_start_offset
    while (region := log.read(position, BATCH)) is not None:
        chunk = decode_offsets(region.read_bytes())
        offsets.extend(o for o in chunk if o >= position)
        position = chunk[-1] + 1
    return offsets


def test_a_log_with_more_segments_than_descriptors_serves_every_segment(
        tmp_path: Path) -> None:
    cache = OpenFileCache(4)
    log = Log.open(tmp_path / "t-0", CONFIG, files=cache)
    for _ in range(60):
        log.append_as_leader(v2_batch(3), leader_epoch=1)
    assert len(log.segments) == 30  # 90 files (.log, .index, .timeindex)
    assert _all_offsets(log) == list(range(180))
    assert log.offset_for_timestamp(0) == (0, 1_000)
    assert len(cache) <= 4 and _open_descriptors_under(tmp_path) <= 4
    log.close()
    assert _open_descriptors_under(tmp_path) == 0


def test_a_restart_loads_only_the_active_segment_and_opens_no_more_than_the_cache(
        tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG)
    for _ in range(60):
        log.append_as_leader(v2_batch(3), leader_epoch=1)
    log.close()
    for clean in (True, False):
        cache = OpenFileCache(4)
        reopened = Log.open(directory, CONFIG, files=cache, clean_shutdown=clean,
                            recovery_point=180)
        assert [s.loaded for s in reopened.segments] == [False] * 29 + [True]
        assert reopened.log_end_offset == 180
        assert _open_descriptors_under(tmp_path) <= 4
        assert _all_offsets(reopened) == list(range(180))  # each loads on first use
        assert all(s.loaded for s in reopened.segments)
        reopened.close()


def test_out_of_descriptors_during_a_roll_fails_that_append_only(tmp_path: Path) -> None:
    """EMFILE while creating the next segment: the produce fails with a clear, retriable
    error, the log stays online and serves reads, and the next append rolls."""
    exhausted = [False]

    def opener(path: Path, flags: int) -> int:
        if exhausted[0] and flags & os.O_CREAT:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))
        return os.open(path, flags)

    cache = OpenFileCache(64, opener=opener)
    failures: list[OSError] = []
    log = Log.open(tmp_path / "t-0", CONFIG, files=cache,
                   on_disk_failure=lambda _log, exc: failures.append(exc))
    log.append_as_leader(v2_batch(3), leader_epoch=1)
    log.append_as_leader(v2_batch(3), leader_epoch=1)  # the segment is full: next rolls
    exhausted[0] = True
    with pytest.raises(TooManyOpenFilesError, match="Too many open files"):
        log.append_as_leader(v2_batch(3), leader_epoch=1)
    assert not log.offline and failures == []
    assert _all_offsets(log) == list(range(6))
    exhausted[0] = False
    assert log.append_as_leader(v2_batch(3), leader_epoch=1).first_offset == 6
    assert _all_offsets(log) == list(range(9))
    log.close()


def test_retention_deletes_a_lazy_segment_whose_index_is_missing(tmp_path: Path) -> None:
    """An old segment never loaded since the start goes by retention without reading it,
    even when its index file is gone."""
    directory = tmp_path / "t-0"
    config = dataclasses.replace(CONFIG, retention_ms=-1)  # no time retention: no load
    log = Log.open(directory, config)
    for _ in range(6):
        log.append_as_leader(v2_batch(3), leader_epoch=1)
    log.close()
    (directory / f"{0:020d}.index").unlink()
    reopened = Log.open(directory, config, clean_shutdown=True)
    reopened.maybe_increment_log_start_offset(6)  # DeleteRecords past the first segment
    assert reopened.delete_old_segments(high_watermark=18) == 1
    assert not reopened.offline and not reopened.segments[0].loaded
    assert sorted(p.name for p in directory.glob(f"{0:020d}.*")) == []
    assert _all_offsets(reopened) == list(range(6, 18))
    reopened.close()


def test_rolled_segments_are_flushed_so_a_crash_recovers_the_active_one_only(
        tmp_path: Path) -> None:
    from kafkalite_server.log.manager import LogManager

    manager = LogManager([tmp_path], CONFIG)
    log = manager.create_log("t", 0)
    for _ in range(10):
        log.append_as_leader(v2_batch(3), leader_epoch=1)
    assert log.recovery_point == 0
    manager.flush_dirty(now=0)  # the broker's flush task, every second
    assert log.recovery_point == log.active_segment.base_offset == 24
    manager.checkpoint_recovery_points()
    # a crash now: the next start re-scans from the recovery point only
    reopened = Log.open(tmp_path / "t-0", CONFIG, recovery_point=log.recovery_point)
    assert [s.loaded for s in reopened.segments] == [False] * 4 + [True]
    assert _all_offsets(reopened) == list(range(30))
    reopened.close()
    manager.shutdown()
