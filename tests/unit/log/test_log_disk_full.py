"""A full disk: a write completes or leaves nothing behind, and its log dir goes offline.

A write that fails part-way is cut back to the segment's last good size (log and both
indexes), the log directory is taken offline (one ERROR line naming it), every later
append or read of its partitions is refused without touching the disk, and a restart
serves every record whose append had returned.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from disk_faults import FillingDisk
from log_batches import decode_offsets, v2_batch

from kafkalite.protocol.errors import KafkaStorageError
from kafkalite.records.batch_header import patch_v2_batch
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from kafkalite_server.log.segment import LogSegment

BATCH = len(v2_batch(3))
CONFIG = LogConfig(segment_bytes=BATCH * 8, index_interval_bytes=1, file_delete_delay_ms=0)


def _stamped(base_offset: int) -> bytearray:
    batch = v2_batch(3, timestamp=1_000 + base_offset)  # max timestamp 1_002 + base
    patch_v2_batch(batch, 0, base_offset, 0)
    return batch


def _all_offsets(log: Log) -> list[int]:
    offsets: list[int] = []
    while (region := log.read(len(offsets), 1 << 20)) is not None:
        offsets.extend(decode_offsets(region.read_bytes()))
    return offsets


def test_short_writes_are_completed(tmp_path: Path) -> None:
    disk = FillingDisk(chunk=7)
    log = Log.open(tmp_path / "t-0", CONFIG, pwrite=disk)
    for _ in range(10):
        log.append_as_leader(v2_batch(3), leader_epoch=0)
    log.close()
    assert disk.calls > 10 * BATCH // 7
    assert _all_offsets(Log.open(tmp_path / "t-0", CONFIG)) == list(range(30))


@pytest.mark.parametrize("room", [0, 1, BATCH // 2, BATCH - 1, BATCH + 3, 3 * BATCH + 5])
def test_a_failed_append_leaves_the_segment_at_its_last_good_size(tmp_path: Path,
                                                                    room: int) -> None:
    config = LogConfig(index_interval_bytes=1)
    segment = LogSegment(tmp_path, 0, config, pwrite=FillingDisk(room=10**9))
    for i in range(3):
        segment.append(3 * i, 3 * i + 2, 1_002 + 3 * i, 3 * i + 2, _stamped(3 * i))
    good = (segment.size, segment.offset_index.entries, segment.time_index.entries,
            segment.max_timestamp_so_far, segment.next_offset)
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    segment._pwrite = segment.offset_index._pwrite = segment.time_index._pwrite = (
        FillingDisk(room=room, chunk=5))
    with pytest.raises(OSError, match="No space"):
        for i in range(3, 20):
            segment.append(3 * i, 3 * i + 2, 1_002 + 3 * i, 3 * i + 2, _stamped(3 * i))
    written = (segment.size - good[0]) // BATCH  # whole batches that fit before the failure
    assert segment.size == good[0] + written * BATCH
    assert {p.name: p.stat().st_size for p in tmp_path.iterdir()} == {
        "00000000000000000000.log": segment.size,
        "00000000000000000000.index": 8 * (good[1] + written),
        "00000000000000000000.timeindex": 12 * (good[2] + written)}
    if written == 0:
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files
        assert (segment.size, segment.offset_index.entries, segment.time_index.entries,
                segment.max_timestamp_so_far, segment.next_offset) == good
    segment.close()
    reopened = LogSegment(tmp_path, 0, config)
    assert reopened.index_problem is None and not reopened.needs_recovery
    assert reopened.next_offset == 3 * (3 + written)


def _manager(tmp_path: Path, disk: FillingDisk | None = None) -> LogManager:
    manager = LogManager([tmp_path / "a", tmp_path / "b"], CONFIG)
    if disk is not None:
        manager.pwrite = disk
    return manager


def test_disk_full_takes_the_log_dir_offline_once(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    manager = _manager(tmp_path)
    full, other = manager.create_log("t", 0), manager.create_log("t", 1)
    neighbour = manager.create_log("u", 0)  # same dir as t-0
    assert full.directory.parent == neighbour.directory.parent != other.directory.parent
    for _ in range(5):
        full.append_as_leader(v2_batch(3), leader_epoch=0)
    acked = full.log_end_offset
    disk = FillingDisk(room=BATCH * 2 + BATCH // 2)
    manager.pwrite = disk
    with caplog.at_level(logging.ERROR), pytest.raises(KafkaStorageError, match="No space"):
        for _ in range(10):
            full.append_as_leader(v2_batch(3), leader_epoch=0)
            acked = full.log_end_offset
    assert acked == 5 * 3 + 2 * 3
    assert manager.offline_dirs == {full.directory.parent}
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and str(full.directory.parent) in errors[0]
    calls = disk.calls
    for attempt in (lambda: full.append_as_leader(v2_batch(1), leader_epoch=0),
                    lambda: neighbour.append_as_leader(v2_batch(1), leader_epoch=0),
                    lambda: full.read(0, 1 << 20), full.flush, full.roll):
        with pytest.raises(KafkaStorageError, match="offline"):
            attempt()
    assert disk.calls == calls, "an offline dir was written to again"
    manager.pwrite = FillingDisk()
    other.append_as_leader(v2_batch(3), leader_epoch=0)  # the healthy dir still serves
    new = manager.create_log("v", 0)
    assert new.directory.parent == other.directory.parent
    manager.pwrite = disk  # the disk under both dirs is full at the stop: it must not raise
    manager.shutdown()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert [str(full.directory.parent) in e for e in errors] == [True, False]
    assert str(other.directory.parent) in errors[1]  # its final index entry failed
    for log_dir in (full.directory.parent, other.directory.parent):
        assert not (log_dir / CLEAN_SHUTDOWN_FILE).exists()

    restarted = _manager(tmp_path)
    reopened = restarted.get_log("t", 0)
    assert reopened is not None and not reopened.offline
    assert _all_offsets(reopened) == list(range(acked))
    reopened.append_as_leader(v2_batch(3), leader_epoch=0)
    assert reopened.log_end_offset == acked + 3
    restarted.shutdown()


def test_every_log_dir_offline_refuses_new_logs(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG)
    log = manager.create_log("t", 0)
    manager.pwrite = FillingDisk(room=0)
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(v2_batch(1), leader_epoch=0)
    with pytest.raises(KafkaStorageError, match="every log directory is offline"):
        manager.create_log("t", 1)
    manager.shutdown()


def test_a_failed_checkpoint_write_takes_the_dir_offline(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    manager = LogManager([tmp_path], CONFIG)
    log = manager.create_log("t", 0)
    log.append_as_leader(v2_batch(1), leader_epoch=0)

    def no_space(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("kafkalite_server.log.checkpoint.os.fsync", no_space)
    manager.checkpoint_recovery_points()
    assert manager.offline_dirs == {tmp_path} and log.offline
    assert not list(tmp_path.glob("*.tmp"))
    manager.shutdown()
    monkeypatch.undo()
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
