"""All partition logs of a broker across its ``log.dirs``, and their checkpoint files.

On start every ``<topic>-<partition>`` directory is loaded with the recovery point and
log start offset from the directory's checkpoint files; recovery is skipped when the
``.kafka_cleanshutdown`` marker says the last stop was clean (the marker is consumed).

Log directory failure (Kafka's LogDirFailureChannel): the first disk error in a log dir
(a failed append, roll, flush, read or checkpoint) takes the whole dir offline, logged
once at ERROR. Its logs refuse every request with KAFKA_STORAGE_ERROR, no maintenance
task touches it again, new partitions go to other dirs, and the stop leaves it without a
clean-shutdown marker so the next start recovers it.

Open files: every segment file of every log is opened through one
:class:`~kafkalite_server.log.open_files.OpenFileCache` of ``kafkalite.log.open.files.max``
descriptors, so the broker holds that many at most whatever the number of partitions and
segments. Running out of descriptors anyway (connections) fails the one request that
needed a file, never a log dir: a new partition's creation, or a produce that had to roll.

Compaction: :meth:`LogManager.start_cleaner` starts the log cleaner threads
(:mod:`kafkalite_server.log.cleaner_manager`) over the compacted logs, bounded by the high
watermark the replica manager reports; :meth:`shutdown` stops them before closing logs.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from kafkalite.protocol.errors import InconsistentTopicIdError, KafkaStorageError
from kafkalite_server.directory_lock import try_lock_directory
from kafkalite_server.log.checkpoint import OffsetCheckpointFile
from kafkalite_server.log.cleaner_manager import (
    CLEANER_OFFSET_CHECKPOINT,
    CleanerConfig,
    LogCleanerManager,
)
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.file_io import Pwrite
from kafkalite_server.log.log import Log, parse_log_dir_name, wall_clock_ms
from kafkalite_server.log.open_files import (
    OPEN_FILES_MAX_AUTO,
    OpenFileCache,
    default_open_files_max,
    is_out_of_descriptors,
)
from kafkalite_server.log.partition_metadata import (
    CorruptPartitionMetadataError,
    read_topic_id,
    write_topic_id,
)
from kafkalite_server.topic_partition import TopicPartition

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
DELETE_DIR_SUFFIX = "-delete"
STRAY_DIR_SUFFIX = "-stray"
"""A partition directory of a deleted topic, set aside (``<name>.<id>-stray``) when a topic
of the same name but another id takes its place; kept for the operator, never loaded."""


logger = logging.getLogger(__name__)


class LogManager:
    """Creates, loads, checkpoints, cleans and deletes the broker's partition logs."""

    def __init__(self, log_dirs: list[Path], default_config: LogConfig, *,
                 now_ms: Callable[[], int] = wall_clock_ms,
                 topic_config: Callable[[str], LogConfig] | None = None,
                 pwrite: Pwrite = os.pwrite,
                 cleaner_config: CleanerConfig | None = None,
                 open_files_max: int = OPEN_FILES_MAX_AUTO,
                 producer_expiration_ms: int | None = None,
                 batch_decompressed_max_bytes: int | None = None) -> None:
        """``topic_config`` gives a topic's effective config (the broker persists topic
        overrides); without it every log uses ``default_config``. :attr:`pwrite` writes
        every log segment and index; tests replace it, even on a running broker, with one
        that fails like a full disk. ``open_files_max`` bounds the open segment files
        (-1: half of the soft RLIMIT_NOFILE); :attr:`files` is that cache.
        ``producer_expiration_ms`` is ``producer.id.expiration.ms`` (None: never), and
        ``batch_decompressed_max_bytes`` ``kafkalite.batch.decompressed.max.bytes``."""
        if not log_dirs:
            raise ValueError("at least one log directory is needed")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.files = OpenFileCache(open_files_max if open_files_max != OPEN_FILES_MAX_AUTO
                                   else default_open_files_max())
        self.default_config = default_config
        self.producer_expiration_ms = producer_expiration_ms
        self.batch_decompressed_max_bytes = batch_decompressed_max_bytes
        self._now_ms = now_ms
        self._topic_config = topic_config or (lambda _topic: default_config)
        self.pwrite = pwrite
        self.offline_dirs: set[Path] = set()
        self._offline_listeners: list[Callable[[Path], object]] = []
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._topic_ids: dict[TopicPartition, uuid.UUID] = {}
        """Each log's topic id, once read from or written to its ``partition.metadata``."""
        self._pending_dir_deletes: list[tuple[int, Log]] = []
        self._locks: list[int] = []
        self.cleaner_config = cleaner_config or CleanerConfig()
        self._first_dirty_offsets: dict[TopicPartition, int] = {}
        self.cleaner: LogCleanerManager | None = None
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._locks.append(_lock(log_dir))
            self._load_dir(log_dir)

    def _load_dir(self, log_dir: Path) -> None:
        recovery_points = OffsetCheckpointFile(log_dir / RECOVERY_POINT_CHECKPOINT).read()
        start_offsets = OffsetCheckpointFile(log_dir / LOG_START_OFFSET_CHECKPOINT).read()
        self._first_dirty_offsets.update(
            OffsetCheckpointFile(log_dir / CLEANER_OFFSET_CHECKPOINT).read())
        marker = log_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        with os.scandir(log_dir) as entries:  # d_type: no stat per entry
            children = sorted(Path(entry.path) for entry in entries if entry.is_dir())
        for child in children:
            if child.name.endswith(STRAY_DIR_SUFFIX):
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
            self._logs[key] = self._open(log_dir, child, self._topic_config(key[0]),
                                         recovery_point=recovery_points.get(key, 0),
                                         log_start_offset=start_offsets.get(key, 0),
                                         clean_shutdown=clean)
            self._dir_of[key] = log_dir
        marker.unlink(missing_ok=True)

    def _open(self, log_dir: Path, directory: Path, config: LogConfig, *,
              clean_shutdown: bool, recovery_point: int = 0, log_start_offset: int = 0) -> Log:
        return Log.open(directory, config, recovery_point=recovery_point,
                        log_start_offset=log_start_offset, clean_shutdown=clean_shutdown,
                        now_ms=self._now_ms, pwrite=self._write, files=self.files,
                        producer_expiration_ms=self.producer_expiration_ms,
                        batch_decompressed_max_bytes=self.batch_decompressed_max_bytes,
                        on_disk_failure=lambda _log, exc: self.mark_dir_offline(log_dir, exc))

    def _write(self, fd: int, data: bytes | bytearray | memoryview, position: int) -> int:
        return self.pwrite(fd, data, position)

    # ------------------------------------------------------------------- offline dirs

    def add_offline_listener(self, listener: Callable[[Path], object]) -> None:
        """``listener(log_dir)`` runs when a dir goes offline, on the thread that found
        the failure (the replica manager tells the controller)."""
        self._offline_listeners.append(listener)

    def mark_dir_offline(self, log_dir: Path, exc: BaseException) -> None:
        """Take ``log_dir`` offline after a disk error: every log in it stops serving.

        Called once per dir; later failures in an offline dir are already refused."""
        if log_dir in self.offline_dirs:
            return
        self.offline_dirs.add(log_dir)
        logs = [self._logs[key] for key, owner in self._dir_of.items() if owner == log_dir]
        for log in logs:
            log.mark_offline()
        logger.error("log directory %s is offline after a disk error (%s); its %d partitions "
                     "answer KAFKA_STORAGE_ERROR until the broker restarts", log_dir, exc,
                     len(logs))
        for listener in self._offline_listeners:
            listener(log_dir)

    def _online_logs(self) -> list[Log]:
        """A snapshot (``list()`` of a dict is atomic: the flush thread calls this while
        the loop adds logs)."""
        return [log for log in list(self._logs.values()) if not log.offline]

    # --------------------------------------------------------------------------- logs

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def topic_id_of(self, topic: str, partition: int) -> uuid.UUID | None:
        """The topic id in the partition directory's ``partition.metadata``; None when it
        has none (or there is no such log). KafkaStorageError names a file that does not
        parse."""
        key = (topic, partition)
        known = self._topic_ids.get(key)
        log = self._logs.get(key)
        if known is not None or log is None:
            return known
        try:
            found = read_topic_id(log.directory)
        except (CorruptPartitionMetadataError, OSError) as exc:
            raise KafkaStorageError(str(exc)) from exc
        if found is not None:
            self._topic_ids[key] = found
        return found

    def set_aside_stray(self, topic: str, partition: int, topic_id: uuid.UUID) -> bool:
        """A directory of ``topic``-``partition`` that belongs to another topic id (a
        deleted topic's, left while its broker was away) stops being the partition's log:
        it is renamed ``<name>.<id>-stray`` and kept, unread, for the operator, as Kafka
        sets stray logs aside. Returns whether it was."""
        stored = self.topic_id_of(topic, partition)
        if stored is None or stored == topic_id:
            return False
        key = (topic, partition)
        log = self._logs.pop(key)
        self._dir_of.pop(key, None)
        self._topic_ids.pop(key, None)
        self._first_dirty_offsets.pop(key, None)
        if self.cleaner is not None:
            self.cleaner.forget(key)
        log.close()
        stray = log.directory.with_name(
            f"{log.directory.name}.{stored.hex}{STRAY_DIR_SUFFIX}")
        try:
            os.rename(log.directory, stray)
        except OSError as exc:
            raise KafkaStorageError(f"cannot move {log.directory} aside: {exc}") from exc
        logger.warning("%s-%d: the directory holds topic id %s, but the topic is now %s (it "
                       "was deleted and created again); moved aside to %s, not served",
                       topic, partition, stored, topic_id, stray)
        return True

    def create_log(self, topic: str, partition: int, config: LogConfig | None = None, *,
                   topic_id: uuid.UUID | None = None) -> Log:
        """The partition's log, created in the log dir holding the fewest logs if new. With
        ``topic_id``, its directory's ``partition.metadata`` says so from now on (a
        directory that names another id is refused: :meth:`set_aside_stray` first)."""
        key = (topic, partition)
        log = self._logs.get(key)
        if log is None:
            log = self._new_log(topic, partition, config)
        if topic_id is not None:
            stored = self.topic_id_of(topic, partition)
            if stored is None:
                write_topic_id(log.directory, topic_id)
                self._topic_ids[key] = topic_id
            elif stored != topic_id:
                raise InconsistentTopicIdError(f"{topic}-{partition}: the log holds topic id "
                                               f"{stored}, not {topic_id}")
        return log

    def _new_log(self, topic: str, partition: int, config: LogConfig | None) -> Log:
        key = (topic, partition)
        online = [log_dir for log_dir in self.log_dirs if log_dir not in self.offline_dirs]
        if not online:
            raise KafkaStorageError(f"cannot create {topic}-{partition}: every log directory "
                                    "is offline")
        if len(online) == 1:
            log_dir = online[0]
        else:
            counts = Counter(self._dir_of.values())
            log_dir = min(online, key=lambda d: counts[d])
        try:
            log = self._open(log_dir, log_dir / f"{topic}-{partition}",
                             config or self._topic_config(topic), clean_shutdown=True)
        except OSError as exc:
            if is_out_of_descriptors(exc):
                raise self.files.out_of_descriptors(log_dir / f"{topic}-{partition}",
                                                    exc) from exc
            self.mark_dir_offline(log_dir, exc)
            raise KafkaStorageError(f"cannot create {topic}-{partition} in {log_dir}: "
                                    f"{exc}") from exc
        self._logs[key] = log
        self._dir_of[key] = log_dir
        return log

    def delete_log(self, topic: str, partition: int) -> None:
        """Topic deletion: the directory is renamed ``<name>.<id>-delete`` at once and
        removed after ``file.delete.delay.ms`` (open regions stay readable meanwhile)."""
        key = (topic, partition)
        log = self._logs.pop(key, None)
        self._dir_of.pop(key, None)
        self._topic_ids.pop(key, None)
        if log is None:
            return
        if self.cleaner is not None:
            self.cleaner.forget(key)
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
        deleted = 0
        for log in self._online_logs():
            with suppress(KafkaStorageError):  # the dir went offline: mark_dir_offline said so
                deleted += log.delete_old_segments(high_watermark_of(log))
        return deleted

    def remove_expired_producers(self) -> int:
        """``producer.id.expiration.ms`` over every log (every
        ``producer.id.expiration.check.interval.ms``); returns the producers forgotten."""
        return sum(log.remove_expired_producers() for log in self._online_logs())

    def flush_dirty(self, now: int) -> int:
        """Flush logs whose ``flush.ms`` has passed since their last flush (returns how
        many), and every segment a roll left unflushed, so that the recovery points follow
        the rolls and a restart after a crash recovers little.

        May run in a worker thread; a failing fsync takes the log's dir offline."""
        flushed = 0
        for log in self._online_logs():
            flush_ms = log.config.flush_ms
            try:
                if flush_ms is not None and now - log.last_flush_ms >= flush_ms:
                    log.flush()
                    flushed += 1
                else:
                    log.flush_inactive_segments()
            except KafkaStorageError:
                continue
        return flushed

    def checkpoint_recovery_points(self) -> None:
        self._write_checkpoints(RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        self._write_checkpoints(LOG_START_OFFSET_CHECKPOINT, lambda log: log.log_start_offset)

    # ---------------------------------------------------------------------- compaction

    def start_cleaner(self, high_watermark_of: Callable[[Log], int]) -> LogCleanerManager:
        """Start the log cleaner (unless ``log.cleaner.enable`` is false); compaction never
        goes past ``high_watermark_of(log)``."""
        if self.cleaner is None:
            self.cleaner = LogCleanerManager(
                self.cleaner_config,
                logs=lambda: [log for log in list(self._logs.values()) if not log.offline],
                first_dirty_offsets=self._first_dirty_offsets,
                save_checkpoints=self._checkpoint_cleaner_offsets,
                high_watermark_of=high_watermark_of, now_ms=self._now_ms)
            self.cleaner.start()
        return self.cleaner

    def _checkpoint_cleaner_offsets(self, offsets: dict[TopicPartition, int]) -> None:
        """``cleaner-offset-checkpoint`` of every dir: the first dirty offset of each of
        its compacted logs (called from a cleaner thread)."""
        self._write_checkpoints(CLEANER_OFFSET_CHECKPOINT, lambda log: offsets.get(
            log.topic_partition) if log.config.compacts else None)

    def _write_checkpoints(self, name: str, value: Callable[[Log], int | None]) -> None:
        for log_dir in self.log_dirs:
            if log_dir in self.offline_dirs:
                continue
            owned = [(key, self._logs.get(key)) for key, owner in list(self._dir_of.items())
                     if owner == log_dir]
            offsets = {key: offset for key, log in owned if log is not None
                       and (offset := value(log)) is not None}
            try:
                OffsetCheckpointFile(log_dir / name).write(offsets)
            except OSError as exc:
                if is_out_of_descriptors(exc):  # the next checkpoint interval tries again
                    logger.error("cannot write %s: %s", log_dir / name, exc)
                    continue
                self.mark_dir_offline(log_dir, exc)

    def shutdown(self) -> None:
        """Flush, checkpoint, close, then mark each log dir cleanly shut down.

        Never raises for a disk error (a stop on a full disk still stops): a dir that is
        or goes offline is closed without its clean-shutdown marker, so the next start
        recovers it. The cleaner threads stop first (a pass in progress is dropped).
        """
        if self.cleaner is not None:
            self.cleaner.stop()
        for log in self._online_logs():
            with suppress(KafkaStorageError):  # the dir is offline now, and logged so
                log.flush()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        for log in self.all_logs():
            log.close()
        for _, log in self._pending_dir_deletes:
            log.delete()
        self._pending_dir_deletes.clear()
        for log_dir in self.log_dirs:
            if log_dir in self.offline_dirs:
                continue
            try:
                write_clean_shutdown_marker(log_dir)
            except OSError as exc:
                logger.error("cannot mark %s cleanly shut down (%s); the next start "
                             "recovers it", log_dir, exc)
        self.files.close_all()
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()
        self._logs.clear()
        self._dir_of.clear()


def write_clean_shutdown_marker(log_dir: Path) -> None:
    marker = log_dir / CLEAN_SHUTDOWN_FILE
    try:
        marker.write_text('{"version":0,"brokerEpoch":-1}', encoding="utf-8")
    except OSError:
        marker.unlink(missing_ok=True)  # a half-written marker must not claim a clean stop
        raise


def _lock(log_dir: Path) -> int:
    """Hold ``.lock`` exclusively: two brokers must never share a log dir."""
    fd = try_lock_directory(log_dir)
    if fd is None:
        raise KafkaStorageError(f"{log_dir} is locked by another broker process")
    return fd
