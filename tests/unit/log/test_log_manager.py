"""LogManager: loading dirs with checkpoints, clean-shutdown marker, lock, deletion."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_batches import v2_batch

from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.log.checkpoint import OffsetCheckpointFile
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.log.manager import LogManager

CONFIG = LogConfig(file_delete_delay_ms=0)


def test_shutdown_then_start_restores_logs_without_recovery(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, CONFIG)
    for partition in range(3):
        log = manager.create_log("my-topic", partition)
        log.append_as_leader(v2_batch(partition + 1), leader_epoch=0)
    manager.shutdown()
    assert (tmp_path / "a" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "a" / "recovery-point-offset-checkpoint").read_text().startswith("0\n")
    restarted = LogManager(dirs, CONFIG)
    assert not (tmp_path / "a" / ".kafka_cleanshutdown").exists()
    ends = {(p, restarted.get_log("my-topic", p).log_end_offset) for p in range(3)}  # type: ignore[union-attr]
    assert ends == {(0, 1), (1, 2), (2, 3)}
    assert all(log.recovery_point == log.log_end_offset for log in restarted.all_logs())
    assert len(list((tmp_path / "a").glob("my-topic-*"))) + len(
        list((tmp_path / "b").glob("my-topic-*"))) == 3
    restarted.shutdown()


def test_unclean_start_recovers_from_checkpointed_recovery_point(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)  # a broker that dies without shutdown()
    log.append_as_leader(v2_batch(2), leader_epoch=0)
    log.flush()
    OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint").write({("t", 0): 2})
    log.append_as_leader(v2_batch(2), leader_epoch=0)
    segment = tmp_path / "t-0" / f"{0:020d}.log"
    with open(segment, "r+b") as file:  # the crash tore the unflushed batch
        file.truncate(segment.stat().st_size - 5)
    manager = LogManager([tmp_path], CONFIG)
    recovered = manager.get_log("t", 0)
    assert recovered is not None and recovered.log_end_offset == 2
    assert recovered.recovery_point == 2
    manager.shutdown()


def test_a_locked_log_dir_is_refused(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG)
    with pytest.raises(KafkaStorageError, match="locked"):
        LogManager([tmp_path], CONFIG)
    manager.shutdown()


def test_delete_log_removes_the_directory(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG)
    manager.create_log("gone", 0).append_as_leader(v2_batch(1), leader_epoch=0)
    manager.delete_log("gone", 0)
    assert manager.get_log("gone", 0) is None
    assert not any(tmp_path.glob("gone-0*"))


def test_retention_and_start_offset_checkpoint(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=len(v2_batch(1)), retention_ms=1,
                       file_delete_delay_ms=0)
    manager = LogManager([tmp_path], config, now_ms=lambda: 10**13)
    log = manager.create_log("t", 0)
    for _ in range(3):
        log.append_as_leader(v2_batch(1), leader_epoch=0)
    assert manager.run_retention(lambda log: log.log_end_offset) == 2
    manager.checkpoint_log_start_offsets()
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 2\n"
    manager.shutdown()
