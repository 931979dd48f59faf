"""Which log to clean next, the cleaner threads, and ``cleaner-offset-checkpoint``.

Kafka's LogCleanerManager in small: ``log.cleaner.threads`` threads (each with its share
of ``log.cleaner.dedupe.buffer.size`` as its offset map) repeatedly take the *filthiest*
log (highest dirty ratio, dirty bytes over clean plus dirty bytes) among logs with
``cleanup.policy`` compact or compact,delete whose ratio reaches
``min.cleanable.dirty.ratio``, or whose oldest dirty record waited longer than
``max.compaction.lag.ms``. With none, a log whose retained tombstones reached their delete
horizon is cleaned (to drop them). With nothing to do, a thread sleeps
``log.cleaner.backoff.ms``. A log is cleaned by one thread at a time.

Each log's first dirty offset is kept here and written to ``cleaner-offset-checkpoint``
(Kafka's format) in its log dir after every pass. A log that cannot be cleaned (a corrupt
batch, a map too small for one batch, a disk error while writing the cleaned copy) is
logged once and left alone until the broker restarts, as Kafka marks it uncleanable.

The threads never touch a log except through the cleaner's locked steps (see
:mod:`kafkalite_server.log.cleaner`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.log.cleaner import (
    IO_BUFFER_SIZE,
    Cleaner,
    CleaningAbortedError,
    CleaningPlan,
    CleaningResult,
    LogCleaningError,
    plan_cleaning,
)
from kafkalite_server.log.log import Log, SegmentsChangedError
from kafkalite_server.log.offset_map import SLOT_SIZE
from kafkalite_server.log.throttler import Throttler
from kafkalite_server.topic_partition import TopicPartition

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
NO_IO_LIMIT = 1.7976931348623157e308
"""Kafka's default for ``log.cleaner.io.max.bytes.per.second`` (Double.MAX_VALUE)."""


logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The broker's ``log.cleaner.*`` settings, with Kafka's defaults."""

    enable: bool = True
    threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    io_buffer_size: int = IO_BUFFER_SIZE
    io_max_bytes_per_second: float = NO_IO_LIMIT
    backoff_ms: int = 15_000

    @property
    def map_bytes_per_thread(self) -> int:
        return self.dedupe_buffer_size // max(self.threads, 1)


@dataclass(frozen=True, slots=True)
class _Job:
    log: Log
    plan: CleaningPlan


class LogCleanerManager:
    """Schedules cleaning over the logs ``logs()`` returns; see the module docstring."""

    def __init__(self, config: CleanerConfig, *, logs: Callable[[], list[Log]],
                 first_dirty_offsets: dict[TopicPartition, int],
                 save_checkpoints: Callable[[dict[TopicPartition, int]], None],
                 high_watermark_of: Callable[[Log], int],
                 now_ms: Callable[[], int]) -> None:
        self.config = config
        self._logs = logs
        self.first_dirty_offsets = dict(first_dirty_offsets)
        self._save_checkpoints = save_checkpoints
        self._high_watermark_of = high_watermark_of
        self._now_ms = now_ms
        self._lock = threading.Lock()
        self._in_progress: set[TopicPartition] = set()
        self.uncleanable: dict[TopicPartition, str] = {}
        self._delete_horizons: dict[TopicPartition, int | None] = {}
        """When a log's kept tombstones expire; a log missing here is checked once."""
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.passes = 0

    # ---------------------------------------------------------------------- threads

    def start(self) -> None:
        if not self.config.enable or self.config.threads == 0 or self._threads:
            return
        for n in range(self.config.threads):
            thread = threading.Thread(target=self._run, args=(self._new_cleaner(),),
                                      name=f"kafka-log-cleaner-thread-{n}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """Stop the threads; a pass in progress stops at its next chunk, unswapped."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    def _new_cleaner(self) -> Cleaner:
        throttler = Throttler(self.config.io_max_bytes_per_second, clock=time.monotonic,
                              sleep=self._stop.wait)
        return Cleaner(self.config.map_bytes_per_thread, throttler=throttler,
                       io_buffer_size=self.config.io_buffer_size,
                       should_stop=self._stop.is_set)

    def _run(self, cleaner: Cleaner) -> None:
        while not self._stop.is_set():
            if self.clean_once(cleaner) is None:
                self._stop.wait(self.config.backoff_ms / 1000)

    # --------------------------------------------------------------------- one pass

    def clean_once(self, cleaner: Cleaner | None = None) -> CleaningResult | None:
        """Clean the log that needs it most, if any (in the calling thread)."""
        job = self._grab()
        if job is None:
            return None
        key = job.log.topic_partition
        try:
            return self._clean(cleaner or self._new_cleaner(), job)
        finally:
            with self._lock:
                self._in_progress.discard(key)

    def _grab(self) -> _Job | None:
        now = self._now_ms()
        with self._lock:
            best: _Job | None = None
            horizon_due: _Job | None = None
            for log in self._logs():
                key = log.topic_partition
                if (not log.config.compacts or log.offline or log.closed
                        or key in self._in_progress or key in self.uncleanable):
                    continue
                try:
                    segments, start = log.cleanable_segments()
                except (SegmentsChangedError, KafkaStorageError):
                    continue
                plan = plan_cleaning(segments, start, self.first_dirty_offsets.get(key, start),
                                     self._high_watermark_of(log), now,
                                     min_compaction_lag_ms=log.config.min_compaction_lag_ms,
                                     max_compaction_lag_ms=log.config.max_compaction_lag_ms)
                if plan.dirty_bytes and (plan.overdue or plan.dirty_ratio
                                         >= log.config.min_cleanable_dirty_ratio):
                    if best is None or plan.dirty_ratio > best.plan.dirty_ratio:
                        best = _Job(log, plan)
                elif horizon_due is None and plan.clean_bytes:
                    horizon = self._delete_horizons.get(key, 0)
                    if horizon is not None and horizon <= now:
                        horizon_due = _Job(log, plan)
            chosen = best or horizon_due
            if chosen is not None:
                self._in_progress.add(chosen.log.topic_partition)
            return chosen

    def _clean(self, cleaner: Cleaner, job: _Job) -> CleaningResult | None:
        log = job.log
        key = log.topic_partition
        try:
            result = cleaner.clean(log, job.plan.first_dirty_offset,
                                   self._high_watermark_of(log), self._now_ms())
        except (SegmentsChangedError, CleaningAbortedError, KafkaStorageError) as exc:
            logger.info("cleaning of %s stopped: %s", log.directory.name, exc)
            return None
        except (LogCleaningError, OSError) as exc:
            logger.error("cannot clean %s, leaving it uncompacted until restart: %s",
                         log.directory.name, exc)
            self.uncleanable[key] = str(exc)
            return None
        except Exception as exc:
            logger.exception("cleaning %s failed; leaving it uncompacted until restart",
                             log.directory.name)
            self.uncleanable[key] = repr(exc)
            return None
        stats = result.stats
        with self._lock:
            self.passes += 1
            self.first_dirty_offsets[key] = result.first_dirty_offset
            self._delete_horizons[key] = result.next_delete_horizon
            offsets = dict(self.first_dirty_offsets)
            try:
                self._save_checkpoints(offsets)
            except OSError as exc:
                logger.error("cannot write %s: %s", CLEANER_OFFSET_CHECKPOINT, exc)
        logger.info("cleaned %s up to offset %d: %d records kept, %d dropped, %d bytes "
                    "read, %d written, %d segments removed", log.directory.name,
                    result.first_dirty_offset, stats.records_kept, stats.records_dropped,
                    stats.bytes_read, stats.bytes_written, stats.segments_removed)
        return result

    def forget(self, key: TopicPartition) -> None:
        """The log was deleted: drop its state (its checkpoint line goes at the next write)."""
        with self._lock:
            self.first_dirty_offsets.pop(key, None)
            self._delete_horizons.pop(key, None)
            self.uncleanable.pop(key, None)


def check_map_size(config: CleanerConfig) -> str | None:
    """Why the dedupe buffer cannot hold a map per thread (None when it can)."""
    if config.threads and config.map_bytes_per_thread < SLOT_SIZE:
        return (f"{config.dedupe_buffer_size} bytes shared by {config.threads} threads leave "
                f"less than {SLOT_SIZE} bytes (one key) per thread")
    return None
