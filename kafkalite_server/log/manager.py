"""All partition logs of a broker across its ``log.dirs``, and their checkpoint files.

On start every ``<topic>-<partition>`` directory is loaded with the recovery point and
log start offset from the directory's checkpoint files; recovery is skipped when the
``.kafka_cleanshutdown`` marker says the last stop was clean (the marker is consumed).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.log.checkpoint import OffsetCheckpointFile
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log, parse_log_dir_name, wall_clock_ms

LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
DELETE_DIR_SUFFIX = "-delete"

TopicPartition = tuple[str, int]


class LogManager:
    """Creates, loads, checkpoints, cleans and deletes the broker's partition logs."""

    def __init__(self, log_dirs: list[Path], default_config: LogConfig, *,
                 now_ms: Callable[[], int] = wall_clock_ms,
                 topic_config: Callable[[str], LogConfig] | None = None) -> None:
        """``topic_config`` gives a topic's effective config (the broker persists topic
        overrides); without it every log uses ``default_config``."""
        if not log_dirs:
            raise ValueError("at least one log directory is needed")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config
        self._now_ms = now_ms
        self._topic_config = topic_config or (lambda _topic: default_config)
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._pending_dir_deletes: list[tuple[int, Log]] = []
        self._locks: list[int] = []
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._locks.append(_lock(log_dir))
            self._load_dir(log_dir)

    def _load_dir(self, log_dir: Path) -> None:
        recovery_points = OffsetCheckpointFile(log_dir / RECOVERY_POINT_CHECKPOINT).read()
        start_offsets = OffsetCheckpointFile(log_dir / LOG_START_OFFSET_CHECKPOINT).read()
        marker = log_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        for child in sorted(log_dir.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(child, ignore_errors=True)
                continue
            try:
                key = parse_log_dir_name(child.name)
            except ValueError:
                continue
            if key in self._logs:
                raise KafkaStorageError(f"{child.name} exists in two log directories")
            self._logs[key] = Log.open(child, self._topic_config(key[0]),
                                       recovery_point=recovery_points.get(key, 0),
                                       log_start_offset=start_offsets.get(key, 0),
                                       clean_shutdown=clean, now_ms=self._now_ms)
            self._dir_of[key] = log_dir
        marker.unlink(missing_ok=True)

    # --------------------------------------------------------------------------- logs

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The partition's log, created in the log dir holding the fewest logs if new."""
        key = (topic, partition)
        existing = self._logs.get(key)
        if existing is not None:
            return existing
        counts = {log_dir: 0 for log_dir in self.log_dirs}
        for log_dir in self._dir_of.values():
            counts[log_dir] += 1
        log_dir = min(self.log_dirs, key=lambda d: counts[d])
        log = Log.open(log_dir / f"{topic}-{partition}", config or self._topic_config(topic),
                       clean_shutdown=True, now_ms=self._now_ms)
        self._logs[key] = log
        self._dir_of[key] = log_dir
        return log

    def delete_log(self, topic: str, partition: int) -> None:
        """Topic deletion: the directory is renamed ``<name>.<id>-delete`` at once and
        removed after ``file.delete.delay.ms`` (open regions stay readable meanwhile)."""
        key = (topic, partition)
        log = self._logs.pop(key, None)
        self._dir_of.pop(key, None)
        if log is None:
            return
        renamed = log.directory.with_name(
            f"{log.directory.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        os.rename(log.directory, renamed)
        log.directory = renamed
        if log.config.file_delete_delay_ms == 0:
            log.delete()
        else:
            self._pending_dir_deletes.append((self._now_ms() + log.config.file_delete_delay_ms,
                                              log))

    # ---------------------------------------------------------------------- maintenance

    def run_retention(self, high_watermark_of: Callable[[Log], int]) -> int:
        """One retention pass over every log; returns the number of segments deleted."""
        now = self._now_ms()
        due = [log for when, log in self._pending_dir_deletes if when <= now]
        self._pending_dir_deletes = [(when, log) for when, log in self._pending_dir_deletes
                                     if when > now]
        for log in due:
            log.delete()
        return sum(log.delete_old_segments(high_watermark_of(log)) for log in self.all_logs())

    def flush_dirty(self, now: int) -> int:
        """Flush logs whose ``flush.ms`` has passed since their last flush; returns count."""
        flushed = 0
        for log in self.all_logs():
            flush_ms = log.config.flush_ms
            if flush_ms is not None and now - log.last_flush_ms >= flush_ms:
                log.flush()
                flushed += 1
        return flushed

    def checkpoint_recovery_points(self) -> None:
        self._write_checkpoints(RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        self._write_checkpoints(LOG_START_OFFSET_CHECKPOINT, lambda log: log.log_start_offset)

    def _write_checkpoints(self, name: str, value: Callable[[Log], int]) -> None:
        for log_dir in self.log_dirs:
            offsets = {key: value(self._logs[key]) for key, owner in self._dir_of.items()
                       if owner == log_dir}
            OffsetCheckpointFile(log_dir / name).write(offsets)

    def shutdown(self) -> None:
        """Flush, checkpoint, close, then mark each log dir cleanly shut down."""
        for log in self.all_logs():
            log.flush()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        for log in self.all_logs():
            log.close()
        for _, log in self._pending_dir_deletes:
            log.delete()
        self._pending_dir_deletes.clear()
        for log_dir in self.log_dirs:
            marker = log_dir / CLEAN_SHUTDOWN_FILE
            marker.write_text('{"version":0,"brokerEpoch":-1}', encoding="utf-8")
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()
        self._logs.clear()
        self._dir_of.clear()


def _lock(log_dir: Path) -> int:
    """Hold ``.lock`` exclusively: two brokers must never share a log dir."""
    fd = os.open(log_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise KafkaStorageError(f"{log_dir} is locked by another broker process") from None
    return fd
