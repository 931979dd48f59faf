"""The log of one partition: an ordered run of segments, the last one active.

Segments are found by base offset with ``bisect`` over a sorted list (Kafka uses a skip
list for the same floor lookup). Everything here runs on the broker's event-loop thread,
except :meth:`Log.flush`, which may run in a worker thread (see there), and the log
cleaner's reads and swap (:mod:`kafkalite_server.log.cleaner` states the rule): every
public method holds :attr:`Log.lock` while it reads or changes the segment list or a
segment's files, and the cleaner takes the same lock for each of its short steps.

Deliberate simplification: retention never deletes the active segment (Kafka rolls an
idle active segment past retention and deletes it, emptying the partition; kafkalite keeps
the newest segment until a roll happens for another reason).

Transactions: the coordinator's markers come in through :meth:`Log.append_marker`; an abort
marker adds an entry to the active segment's ``.txnindex``. :meth:`Log.last_stable_offset`
and :meth:`Log.collect_aborted` serve read_committed fetches. A producer-state snapshot is
written at every roll and at close, so reopening replays only what follows it.
"""

from __future__ import annotations

import bisect
import os
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.errors import (
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from kafkalite.records import decode_batches
from kafkalite.records.batch_header import BatchHeader, read_batch_header
from kafkalite.records.control import Marker, encode_marker, read_marker
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.decompression_limit import DecompressionLimit
from kafkalite_server.log.file_io import Pwrite
from kafkalite_server.log.file_region import FileRegion
from kafkalite_server.log.leader_epoch import LeaderEpochCache
from kafkalite_server.log.open_files import (
    OpenFileCache,
    cache_or_private,
    is_out_of_descriptors,
)
from kafkalite_server.log.producer_snapshot import (
    delete_snapshots,
    snapshot_offsets,
    write_snapshot,
)
from kafkalite_server.log.producer_state import CompletedTxn, ProducerStateManager
from kafkalite_server.log.recompress import recompress_for_topic
from kafkalite_server.log.recovery import load_log, load_producer_state
from kafkalite_server.log.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
)
from kafkalite_server.log.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn
from kafkalite_server.log.validator import (
    AssignedRecords,
    assign_offsets,
    validate_records,
    validate_replicated,
)

_random = random.Random()
"""Not the global generator: that one is the application's (it may seed it)."""


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_log_dir_name(name: str) -> tuple[str, int]:
    """``<topic>-<partition>``; topics may contain dashes, so split at the last one."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return topic, int(partition)


def _first_record_at_or_after(batch: bytes, header: BatchHeader, timestamp: int,
                              start_offset: int, max_bytes: int) -> tuple[int, int]:
    """(offset, timestamp) of the batch's first record at or after both targets.

    Decompression stops at ``max_bytes``; a batch that does not decode (damaged, or
    written before records were validated) answers its own first offset, where a
    reader then meets the error.
    """
    try:
        for record in decode_batches(batch, check_crcs=False, max_bytes=max_bytes):
            if record.timestamp >= timestamp and record.offset >= start_offset:
                return record.offset, record.timestamp
    except CorruptRecordError:
        return max(header.base_offset, start_offset), header.max_timestamp
    return max(header.last_offset, start_offset), header.max_timestamp


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """What a Produce response needs to say about one partition's append."""

    first_offset: int
    last_offset: int
    log_append_time_ms: int
    record_count: int
    log_start_offset: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True, order=True)
class LogOffsetMetadata:
    """An offset with where it lies: the segment's base offset and the byte position of
    the batch starting there. The high watermark is kept this way, as in Kafka, so a
    delayed fetch measures the bytes below it without reading the log."""

    offset: int
    segment_base: int
    position: int

    def bytes_since(self, other: LogOffsetMetadata) -> int | None:
        """Bytes from ``other`` up to here in one segment; None across segments."""
        if self.segment_base != other.segment_base:
            return None
        return max(self.position - other.position, 0)


DiskFailureHandler = Callable[["Log", OSError], None]
"""Told when a file operation of the log failed (the log manager takes its dir offline)."""


class SegmentsChangedError(Exception):
    """The segments a cleaning works on are no longer the log's (retention, truncation or
    deletion replaced them meanwhile): the cleaning is abandoned, nothing was swapped."""


def roll_jitter(config: LogConfig) -> int:
    """Kafka's per-segment jitter: uniform in [0, min(segment.jitter.ms, segment.ms))."""
    bound = min(config.segment_jitter_ms, config.segment_ms)
    return _random.randrange(bound) if bound > 0 else 0


class Log:
    """A partition's segments plus log start offset, recovery point and epoch cache.

    Disk errors: any OSError from a file of the log marks the log :attr:`offline` and is
    raised as KafkaStorageError; an offline log refuses every read and write (Kafka's
    offline replica), so a failing disk is never tried again until the broker restarts.
    A failed append leaves no bytes behind (see :meth:`LogSegment.append`).

    Running out of file descriptors (EMFILE, ENFILE) is not a disk error: the request
    that hit it fails with :class:`~kafkalite_server.log.open_files.TooManyOpenFilesError`
    (a KafkaStorageError naming the limits) and the log stays online. Its files are opened
    through :attr:`files`, the broker's bounded cache of open files.
    """

    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment], *,
                 log_start_offset: int, recovery_point: int,
                 leader_epoch_cache: LeaderEpochCache, producer_state: ProducerStateManager,
                 now_ms: Callable[[], int] = wall_clock_ms, pwrite: Pwrite = os.pwrite,
                 on_disk_failure: DiskFailureHandler | None = None,
                 files: OpenFileCache | None = None,
                 producer_expiration_ms: int | None = None,
                 batch_decompressed_max_bytes: int | None = None) -> None:
        self.directory = directory
        self.batch_decompressed_max_bytes = batch_decompressed_max_bytes
        """``kafkalite.batch.decompressed.max.bytes`` (None: the topic's bound alone)."""
        self.producer_expiration_ms = producer_expiration_ms
        """``producer.id.expiration.ms`` (None: producers never expire)."""
        self.files = cache_or_private(files)
        """Where every segment file of this log is opened (the broker shares one)."""
        self.config = config
        self._bases = [segment.base_offset for segment in segments]
        self._segments = {segment.base_offset: segment for segment in segments}
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state = producer_state
        self._now_ms = now_ms
        self.last_flush_ms = now_ms()
        self._unflushed_messages = 0
        self._deleted_segments: list[tuple[int, LogSegment]] = []
        self._pwrite = pwrite
        self._on_disk_failure = on_disk_failure
        self.offline = False
        self.closed = False
        """Set by :meth:`close` and :meth:`delete`: the files are no longer readable."""
        self.lock = threading.RLock()
        """Held by every public method around the segment list and segment files, and by
        the cleaner thread for each read and for the swap (see the module docstring)."""

    @classmethod
    def open(cls, directory: Path, config: LogConfig, *, recovery_point: int = 0,
             log_start_offset: int = 0, clean_shutdown: bool = False,
             now_ms: Callable[[], int] = wall_clock_ms, pwrite: Pwrite = os.pwrite,
             on_disk_failure: DiskFailureHandler | None = None,
             files: OpenFileCache | None = None,
             producer_expiration_ms: int | None = None,
             batch_decompressed_max_bytes: int | None = None) -> Log:
        """Load (or create) the partition directory, recovering it unless clean."""
        files = cache_or_private(files)
        loaded = load_log(directory, config, recovery_point=recovery_point,
                          log_start_offset=log_start_offset, clean_shutdown=clean_shutdown,
                          now_ms=now_ms(), pwrite=pwrite, files=files,
                          producer_expiration_ms=producer_expiration_ms)
        return cls(directory, config, loaded.segments, log_start_offset=loaded.log_start_offset,
                   recovery_point=loaded.recovery_point,
                   leader_epoch_cache=loaded.leader_epoch_cache,
                   producer_state=loaded.producer_state, now_ms=now_ms, pwrite=pwrite,
                   on_disk_failure=on_disk_failure, files=files,
                   producer_expiration_ms=producer_expiration_ms,
                   batch_decompressed_max_bytes=batch_decompressed_max_bytes)

    # ------------------------------------------------------------------------ disk errors

    @contextmanager
    def _disk(self, action: str) -> Iterator[None]:
        """Refuse if offline; turn an OSError inside into going offline plus a
        KafkaStorageError that names the partition directory and the cause (running out
        of descriptors fails this request only)."""
        with self.lock:
            if self.offline:
                raise KafkaStorageError(f"{self.directory.name}: its log directory "
                                        f"{self.directory.parent} is offline")
            try:
                yield
            except OSError as exc:
                raise self._storage_error(action, exc) from exc

    def _storage_error(self, action: str, exc: OSError) -> KafkaStorageError:
        """The error for a failed file operation; a disk error takes the log offline."""
        if is_out_of_descriptors(exc):
            return self.files.out_of_descriptors(self.directory, exc)
        self.mark_offline(exc)
        return KafkaStorageError(f"{action} {self.directory}: {exc}")

    def mark_offline(self, exc: OSError | None = None) -> None:
        """Stop serving this log; with ``exc``, report the failure to the log manager."""
        if self.offline:
            return
        self.offline = True
        if exc is not None and self._on_disk_failure is not None:
            self._on_disk_failure(self, exc)

    # ------------------------------------------------------------------------- properties

    @property
    def topic_partition(self) -> tuple[str, int]:
        return parse_log_dir_name(self.directory.name)

    @property
    def segments(self) -> list[LogSegment]:
        with self.lock:
            return [self._segments[base] for base in self._bases]

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[self._bases[-1]]

    @property
    def log_end_offset(self) -> int:
        return self.active_segment.next_offset

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments.values())

    @property
    def decompression_limit(self) -> DecompressionLimit:
        """How far one batch of this log may decompress, wherever the broker does it."""
        return DecompressionLimit.of(self.config, self.batch_decompressed_max_bytes)

    def update_config(self, config: LogConfig) -> None:
        """New topic settings take effect for later appends, rolls and retention."""
        self.config = config
        for segment in self._segments.values():
            segment.config = config

    # ----------------------------------------------------------------------------- append

    def append_as_leader(self, records: bytearray | memoryview, *, leader_epoch: int,
                         api_version: int = 8, coordinator: bool = False) -> AppendInfo:
        """Validate one partition's produce records, give them offsets and write them.

        ``records`` is patched in place (offsets, leader epoch, LogAppendTime). A retry of
        one of an idempotent producer's last five batches is not written again: its
        original offsets come back with ``duplicate=True``.
        """
        limit = self.decompression_limit
        headers = validate_records(records, api_version, self.config, coordinator=coordinator,
                                   limit=limit)
        if headers[0].magic >= 2:
            original = self.producer_state.check(headers[0])
            if original is not None:
                return AppendInfo(original.first_offset, original.last_offset, -1,
                                  original.last_offset - original.first_offset + 1,
                                  self.log_start_offset, duplicate=True)
        records, headers = recompress_for_topic(records, headers, self.config, limit)
        now = self._now_ms()
        first_offset = self.log_end_offset
        assigned = assign_offsets(records, headers, first_offset, leader_epoch, self.config, now,
                                  limit)
        with self._disk("append to"):
            self.leader_epoch_cache.assign(leader_epoch, first_offset)
            self._write(assigned, now)
        if headers[0].magic >= 2:
            self.producer_state.update(headers[0], assigned.first_offset, assigned.last_offset)
        return AppendInfo(assigned.first_offset, assigned.last_offset,
                          assigned.log_append_time_ms, assigned.record_count,
                          self.log_start_offset)

    def append_as_follower(self, records: bytearray | memoryview) -> AppendInfo | None:
        """Append batches fetched from the leader, keeping their offsets and epochs.

        Offsets must continue this log (truncate first on divergence); the leader epoch
        cache and producer state follow the batches. ``None`` for an empty fetch.
        """
        headers = validate_replicated(records, self.log_end_offset)
        if not headers:
            return None
        offset_of_max, max_timestamp = headers[0].last_offset, -1
        for header in headers:
            if header.max_timestamp > max_timestamp:
                offset_of_max, max_timestamp = header.last_offset, header.max_timestamp
        first, last = headers[0].base_offset, headers[-1].last_offset
        with self._disk("append to"):
            for header in headers:
                self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
            self._write(AssignedRecords(records, first, last, max_timestamp, offset_of_max,
                                        sum(h.record_count for h in headers), -1),
                        self._now_ms())
        for header in headers:
            self._replay_batch(records, header)
        return AppendInfo(first, last, -1, last - first + 1, self.log_start_offset)

    def _replay_batch(self, records: bytearray | memoryview, header: BatchHeader) -> None:
        """Producer state (and the aborted-transaction index) follow a replicated batch."""
        marker = read_marker(records, header.position) if header.is_control else None
        completed = self.producer_state.load_batch(header, marker)
        if completed is not None:
            self._index_completed(completed)

    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, *, leader_epoch: int) -> AppendInfo:
        """Write the coordinator's commit or abort marker ending the producer's
        transaction (Kafka's append with origin Coordinator). Raises
        InvalidProducerEpochError for a stale producer epoch and
        TransactionCoordinatorFencedError for an older coordinator epoch."""
        now = self._now_ms()
        batch = bytearray(encode_marker(producer_id, producer_epoch, coordinator_epoch,
                                        commit, now))
        header = read_batch_header(batch)
        assert header is not None
        marker = Marker(commit, coordinator_epoch)
        self.producer_state.check_marker(header, marker)
        first_offset = self.log_end_offset
        assigned = assign_offsets(batch, [header], first_offset, leader_epoch, self.config, now)
        with self._disk("append a marker to"):
            self.leader_epoch_cache.assign(leader_epoch, first_offset)
            self._write(assigned, now)
            self._index_completed(self.producer_state.complete(header, marker, first_offset))
        return AppendInfo(first_offset, first_offset, -1, 1, self.log_start_offset)

    def _index_completed(self, completed: CompletedTxn) -> None:
        if not completed.aborted:
            return
        unstable = self.producer_state.first_unstable_offset()
        stable = self.log_end_offset if unstable is None else min(unstable, self.log_end_offset)
        self.active_segment.txn_index.append(AbortedTxn(
            completed.producer_id, completed.first_offset, completed.last_offset, stable))

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset a read_committed consumer may not read yet: the high watermark
        or the start of the oldest open transaction, whichever is lower."""
        unstable = self.producer_state.first_unstable_offset()
        return high_watermark if unstable is None else min(unstable, high_watermark)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), in marker order."""
        with self.lock:
            slot = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
            found: list[AbortedTxn] = []
            for base in self._bases[slot:]:  # a marker past the bound may end a txn inside
                found += self._segments[base].txn_index.collect(fetch_offset, upper_bound)
            return found

    def remove_expired_producers(self) -> int:
        """Forget producers idle for ``producer.id.expiration.ms`` (their next snapshot
        leaves them out too); returns how many went."""
        if self.producer_expiration_ms is None:
            return 0
        with self.lock:
            return self.producer_state.remove_expired(self._now_ms(),
                                                      self.producer_expiration_ms)

    def take_snapshot(self) -> None:
        """Persist producer state as of the log end (at roll and at close)."""
        write_snapshot(self.directory, self.log_end_offset,
                       self.producer_state.snapshot_entries())
        delete_snapshots(self.directory, below=self.log_start_offset)

    def _write(self, assigned: AssignedRecords, now: int) -> None:
        size = len(assigned.data)
        if size > self.config.segment_bytes:
            raise RecordListTooLargeError(f"{size} bytes exceed segment.bytes "
                                          f"{self.config.segment_bytes}")
        segment = self.active_segment
        if segment.should_roll(size, assigned.max_timestamp, assigned.last_offset, now):
            segment = self._roll()
        segment.append(assigned.first_offset, assigned.last_offset, assigned.max_timestamp,
                       assigned.offset_of_max_timestamp, assigned.data)
        self._unflushed_messages += assigned.record_count
        flush_messages, flush_ms = self.config.flush_messages, self.config.flush_ms
        if ((flush_messages is not None and self._unflushed_messages >= flush_messages)
                or (flush_ms is not None and now - self.last_flush_ms >= flush_ms)):
            self._flush(None)

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (an empty one is kept)."""
        with self._disk("roll"):
            return self._roll()

    def _roll(self) -> LogSegment:
        active = self.active_segment
        if active.size == 0:
            return active
        active.on_become_inactive()
        base = self.log_end_offset
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            (self.directory / f"{base:020d}{suffix}").unlink(missing_ok=True)
        segment = LogSegment(self.directory, base, self.config, files=self.files,
                             now_ms=self._now_ms(), pwrite=self._pwrite,
                             roll_jitter_ms=roll_jitter(self.config))
        self._bases.append(base)
        self._segments[base] = segment
        self.take_snapshot()
        return segment

    # ------------------------------------------------------------------------------- read

    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_batch: bool = True) -> FileRegion | None:
        """Whole batches from the one holding ``fetch_offset``, never past ``max_offset``.

        ``None`` at the log end offset (or at ``max_offset``, the high watermark); an
        offset outside [log start, log end] raises OffsetOutOfRangeError.
        """
        with self._disk("read from"):
            return self._read(fetch_offset, max_bytes, max_offset, min_one_batch)

    def _read(self, fetch_offset: int, max_bytes: int, max_offset: int | None,
              min_one_batch: bool) -> FileRegion | None:
        log_end = self.log_end_offset
        if fetch_offset == log_end:
            return None
        if not self.log_start_offset <= fetch_offset < log_end:
            raise OffsetOutOfRangeError(f"offset {fetch_offset} is outside "
                                        f"[{self.log_start_offset}, {log_end}]")
        if max_offset is not None and fetch_offset >= max_offset:
            return None
        slot = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
        for i in range(slot, len(self._bases)):
            segment = self._segments[self._bases[i]]
            max_position = None
            next_base = self._bases[i + 1] if i + 1 < len(self._bases) else None
            if max_offset is not None and (next_base is None or max_offset < next_base):
                found = segment.translate_offset(max_offset)
                max_position = found[0] if found is not None else segment.size
            region = segment.read(fetch_offset, max_bytes, max_position, min_one_batch)
            if region is not None or max_position is not None:
                return region
        return None

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Where ``offset`` lies (the log end: the active segment's end). An offset below
        the log start is placed at the first segment's start."""
        active = self.active_segment
        if offset >= self.log_end_offset:
            return LogOffsetMetadata(offset, active.base_offset, active.size)
        slot = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        segment = self._segments[self._bases[slot]]
        with self._disk("search"):
            found = segment.translate_offset(offset)
        position = found[0] if found is not None else segment.size
        return LogOffsetMetadata(offset, segment.base_offset, position)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record stamped at or after ``timestamp``.

        ListOffsets' -1 (latest) and -2 (earliest) are the caller's: use
        :attr:`log_end_offset` and :attr:`log_start_offset`.
        """
        with self._disk("search"):
            return self._offset_for_timestamp(timestamp)

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record stamped with the log's largest timestamp:
        ListOffsets v7's -3 (KIP-734), which shows whether a partition still gets records
        stamped recently however they were produced."""
        with self._disk("search"):
            largest = max((self._segments[base].largest_timestamp for base in self._bases),
                          default=-1)
            return None if largest < 0 else self._offset_for_timestamp(largest)

    def _offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        for base in self._bases:
            segment = self._segments[base]
            if segment.largest_timestamp < timestamp:
                continue
            found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                position, header = found
                return _first_record_at_or_after(segment.read_batch(position, header), header,
                                                 timestamp, self.log_start_offset,
                                                 self.decompression_limit.max_bytes)
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset) per the leader epoch cache."""
        return self.leader_epoch_cache.end_offset_for(epoch, self.log_end_offset)

    # -------------------------------------------------------------------------- durability

    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync segments holding offsets below ``up_to_offset`` (default: everything),
        then advance the recovery point.

        Safe to call from a worker thread while the loop thread appends and reads (the
        offsets and segment list are snapshotted first; fsync covers all earlier writes).
        It must not overlap :meth:`truncate_to`, :meth:`delete_old_segments`,
        :meth:`close` or :meth:`delete`, which close or remove files.
        """
        if self.offline:
            raise KafkaStorageError(f"{self.directory.name}: its log directory "
                                    f"{self.directory.parent} is offline")
        try:
            self._flush(up_to_offset)
        except OSError as exc:
            raise self._storage_error("flush", exc) from exc

    def flush_inactive_segments(self) -> None:
        """fsync the segments a roll left behind, if the recovery point is below them
        (Kafka flushes a rolled segment in the background): a restart after a crash then
        recovers the active segment only. Safe from a worker thread, as :meth:`flush`."""
        with self.lock:
            rolled_up_to = self._bases[-1]
        if rolled_up_to > self.recovery_point:
            self.flush(rolled_up_to)

    def _flush(self, up_to_offset: int | None) -> None:
        with self.lock:  # a snapshot; fsync runs unlocked (appends go on meanwhile)
            end = self.log_end_offset
            target = end if up_to_offset is None else min(up_to_offset, end)
            first = max(bisect.bisect_right(self._bases, self.recovery_point) - 1, 0)
            segments = [self._segments[base] for base in self._bases[first:] if base < target]
        self.leader_epoch_cache.flush()
        if target <= self.recovery_point:
            return
        for segment in segments:  # from the one holding the recovery point
            segment.flush()
        self.recovery_point = target
        self._unflushed_messages = 0
        self.last_flush_ms = self._now_ms()

    def truncate_to(self, offset: int) -> None:
        """Remove every batch from the one holding ``offset`` on (follower truncation)."""
        with self._disk("truncate"):
            self._truncate_to(offset)

    def _truncate_to(self, offset: int) -> None:
        if offset >= self.log_end_offset:
            return
        if offset <= self.log_start_offset or offset <= self._bases[0]:
            self._truncate_fully_and_start_at(offset)
            return
        while self._bases[-1] >= offset:
            self._schedule_delete(self._segments.pop(self._bases.pop()))
        self.active_segment.truncate_to(offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        delete_snapshots(self.directory, above=self.log_end_offset)
        self.producer_state = load_producer_state(self.directory, self.segments,
                                                  self.log_start_offset)
        self.remove_expired_producers()
        self.recovery_point = min(self.recovery_point, self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything; the log restarts empty at ``offset``."""
        with self._disk("truncate"):
            self._truncate_fully_and_start_at(offset)

    def _truncate_fully_and_start_at(self, offset: int) -> None:
        for base in self._bases:
            self._schedule_delete(self._segments.pop(base))
        self._bases = []
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            (self.directory / f"{offset:020d}{suffix}").unlink(missing_ok=True)
        segment = LogSegment(self.directory, offset, self.config, files=self.files,
                             now_ms=self._now_ms(), pwrite=self._pwrite)
        self._bases.append(offset)
        self._segments[offset] = segment
        self.log_start_offset = self.recovery_point = offset
        self.leader_epoch_cache.clear()
        self.leader_epoch_cache.persist()
        delete_snapshots(self.directory, above=-1)
        self.producer_state = ProducerStateManager()

    # ---------------------------------------------------------------------------- retention

    def delete_old_segments(self, high_watermark: int) -> int:
        """Retention: drop whole old segments by time, size and log-start-offset breach.

        Oldest first, stopping at the first segment that does not qualify. Never the
        active segment, never a segment with offsets at or above ``high_watermark``.
        Returns how many segments went.
        """
        with self._disk("delete old segments of"):
            return self._delete_old_segments(high_watermark)

    def _delete_old_segments(self, high_watermark: int) -> int:
        self.purge_deleted_segments()
        deleted = 0
        config = self.config
        if config.deletes_old_segments and config.retention_ms >= 0:
            now = self._now_ms()
            deleted += self._delete_oldest_while(
                lambda segment: now - segment.largest_timestamp > config.retention_ms,
                high_watermark)
        if config.deletes_old_segments and config.retention_bytes >= 0:
            excess = self.size_in_bytes - config.retention_bytes

            def over_size(segment: LogSegment) -> bool:
                nonlocal excess
                if excess - segment.size < 0:
                    return False
                excess -= segment.size
                return True
            deleted += self._delete_oldest_while(over_size, high_watermark)
        deleted += self._delete_oldest_while(  # the next segment starts at or below it
            lambda _oldest: self._bases[1] <= self.log_start_offset, high_watermark)
        return deleted

    def _delete_oldest_while(self, qualifies: Callable[[LogSegment], bool],
                             high_watermark: int) -> int:
        count = 0
        while len(self._bases) > 1:
            oldest = self._segments[self._bases[0]]
            if high_watermark < self._bases[1] or not qualifies(oldest):
                break
            self._bases.pop(0)
            self._schedule_delete(self._segments.pop(oldest.base_offset))
            count += 1
        if count:
            self.log_start_offset = max(self.log_start_offset, self._bases[0])
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        return count

    def maybe_increment_log_start_offset(self, offset: int) -> None:
        """DeleteRecords: raise the log start offset (segments go at the next retention)."""
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(f"{offset} is above the log end offset")
        if offset > self.log_start_offset:
            with self._disk("move the log start of"):
                self.leader_epoch_cache.truncate_from_start(offset)
            self.log_start_offset = offset

    def _schedule_delete(self, segment: LogSegment) -> None:
        """Rename to ``.deleted`` now; close and unlink after ``file.delete.delay.ms``.

        Keeping the file open that long keeps FileRegions of in-flight fetches readable.
        With a delay of 0 the files go at once.
        """
        segment.mark_deleted()
        if self.config.file_delete_delay_ms == 0:
            segment.delete_files()
        else:
            due = self._now_ms() + self.config.file_delete_delay_ms
            self._deleted_segments.append((due, segment))

    def purge_deleted_segments(self, *, everything: bool = False) -> None:
        """Unlink segments whose delete delay has passed (all of them when closing)."""
        now = self._now_ms()
        remaining = []
        with self.lock:
            for due, segment in self._deleted_segments:
                if everything or due <= now:
                    segment.delete_files()
                else:
                    remaining.append((due, segment))
            self._deleted_segments = remaining

    # ---------------------------------------------------------------------------- compaction

    def cleanable_segments(self) -> tuple[list[LogSegment], int]:
        """(every segment but the active one, log start offset), for the cleaner; each
        segment loaded here, under the lock, so the cleaner thread never loads one."""
        with self.lock:
            if self.offline or self.closed:
                raise SegmentsChangedError(f"{self.directory.name} is offline or closed")
            segments = [self._segments[base] for base in self._bases[:-1]]
            try:
                for segment in segments:
                    segment.load()
            except OSError as exc:
                raise self._storage_error("load the segments of", exc) from exc
            return segments, self.log_start_offset

    def producer_last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch (the batch compaction keeps)."""
        with self.lock:
            return {pid: entry.batches[-1].last_offset
                    for pid, entry in self.producer_state.producers.items() if entry.batches}

    def read_for_cleaning(self, segment: LogSegment, position: int, size: int) -> bytes:
        """Up to ``size`` bytes of an inactive segment, read under the lock; raises
        SegmentsChangedError once the segment is no longer one of the log's."""
        with self.lock:
            if (self.offline or self.closed
                    or self._segments.get(segment.base_offset) is not segment
                    or segment.base_offset == self._bases[-1]):
                raise SegmentsChangedError(f"{segment.log_path.name} left {self.directory.name}")
            return segment.read_bytes(position, min(size, segment.size - position))

    def replace_segments(self, old: list[LogSegment], new: LogSegment | None) -> None:
        """Swap a cleaned segment (files named ``*.swap``) in for ``old``, atomically for
        readers: Kafka's order, so that a crash at any step is completed by recovery.

        1. the new segment takes the old ones' place in the segment list;
        2. the old files are renamed ``.deleted`` (unlinked after file.delete.delay.ms);
        3. the ``.swap`` files get their final names.

        ``new`` None: every record of ``old`` was obsolete; they simply go (any order of
        their deletion is safe). The cleaner never passes None for the first segments
        (it swaps in an empty segment at their base instead), so the log start offset
        never moves here. Raises SegmentsChangedError (nothing done) when ``old`` are no
        longer all in the log.
        """
        with self.lock:
            if self.offline or self.closed or any(self._segments.get(s.base_offset) is not s
                                   or s.base_offset == self._bases[-1] for s in old):
                raise SegmentsChangedError(f"segments of {self.directory.name} changed "
                                           "during cleaning")
            gone = {segment.base_offset for segment in old}
            try:
                bases = [base for base in self._bases if base not in gone]
                segments = {base: self._segments[base] for base in bases}
                if new is not None:
                    bisect.insort(bases, new.base_offset)
                    segments[new.base_offset] = new
                self._bases, self._segments = bases, segments
                for segment in old:
                    self._schedule_delete(segment)
                if new is not None:
                    new.change_suffix(SWAP_SUFFIX, "")
            except OSError as exc:
                raise self._storage_error("swap cleaned segments into", exc) from exc

    # ---------------------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Close every file (after a final time-index entry, as Kafka does on close).

        Never raises for a disk error: an offline log is closed without writing, and a
        failing final entry takes the log offline (the index is checked on the next load).
        """
        with self.lock:
            self.closed = True
            if not self.offline:
                try:
                    self.active_segment.on_become_inactive()
                    if self.log_end_offset not in snapshot_offsets(self.directory):
                        self.take_snapshot()
                except (OSError, KafkaStorageError) as exc:  # no descriptor: not offline
                    if isinstance(exc, OSError) and not is_out_of_descriptors(exc):
                        self.mark_offline(exc)
            for segment in self._segments.values():
                segment.close()
            self.purge_deleted_segments(everything=True)

    def delete(self) -> None:
        """Topic deletion: close everything and remove the partition directory."""
        with self.lock:
            self.closed = True
            for segment in self._segments.values():
                segment.close()
            self.purge_deleted_segments(everything=True)
            shutil.rmtree(self.directory, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"Log({self.directory.name}, start={self.log_start_offset}, "
                f"end={self.log_end_offset}, segments={len(self._bases)})")
