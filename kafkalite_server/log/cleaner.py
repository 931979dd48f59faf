"""The log cleaner: one compaction pass over one partition log (Kafka's ``Cleaner``).

Picture of a compacted log (the book's figure, in words). From the log start offset to the
*first dirty offset* lies the **clean** part: already compacted, each key at most once.
From there to the active segment lies the **dirty** part: everything written since the
last cleaning, where a key may appear many times. A pass:

1. **Plan.** The cleanable end is the end of the last inactive segment that is below the
   upper bound (the high watermark / last stable offset, passed in) and older than
   ``min.compaction.lag.ms``. The active segment is never cleanable.
2. **Map.** Read the dirty part from the first dirty offset up to the cleanable end into
   an :class:`~kafkalite_server.log.offset_map.OffsetMap` (key hash -> newest offset).
   The map is allocated for the pass and dropped after it, sized to the dirty part (it
   holds at most one key per offset there), never above the thread's share of
   ``log.cleaner.dedupe.buffer.size``: an idle broker holds no map at all.
   Records of aborted transactions (the aborted-transaction index names them) are left
   out, so an aborted value never wins over a committed one.
   When the map is full, the pass stops at the batch where it filled: the map end. The
   rest is cleaned by the next pass.
3. **Rewrite.** Every inactive segment from the log start up to the map end is copied,
   in groups of adjacent segments whose total stays under ``segment.bytes`` (and the index
   limits), through :func:`~kafkalite_server.log.batch_filter.filter_batch`: a record
   goes when the map knows a newer offset for its key; a tombstone goes once its delete
   horizon has passed; an aborted transaction's records all go; a transaction marker goes
   once its transaction has no records left and its own delete horizon has passed. Offsets
   are kept, so gaps appear. Batches at or past the map end are copied as they are. The
   cleaned segment inherits the aborted-transaction index entries of the markers it keeps.
4. **Swap.** Each group's output is written as ``<base>.log.cleaned`` (with indexes),
   fsynced, renamed ``.swap`` (the commit point recovery honours), then swapped into the
   segment list by :meth:`Log.replace_segments`; the old files are renamed ``.deleted``
   and unlinked after ``file.delete.delay.ms``. A group whose copy would be identical is
   left alone (no write, no swap). Cleaning never moves the log start offset: the first
   group's cleaned segment keeps its base offset even when no record is left in it.

The first dirty offset then becomes the map end; the manager keeps it in
``cleaner-offset-checkpoint``.

Locking rule (the log's single-thread invariant). The event-loop thread owns a
:class:`Log`; every public Log method holds ``log.lock`` while it reads or changes the
segment list or a segment's files. The cleaner runs in its own thread and:

- reads only *inactive* segments, in chunks, each read under ``log.lock`` after checking
  that the segment is still one of the log's (:meth:`Log.read_for_cleaning`); so retention,
  truncation or deletion on the loop never closes a file under a cleaner read;
- writes only its own ``.cleaned``/``.swap`` files, without the lock;
- changes the log only in :meth:`Log.replace_segments`, under ``log.lock``, which first
  checks that the old segments are all still there, else raises SegmentsChangedError and
  the pass is dropped (its files removed).

The lock is never held across a whole pass, so appends and fetches wait at most one chunk
read or one swap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kafkalite.errors import CorruptRecordError
from kafkalite.records.batch_header import (
    BatchHeader,
    batch_crc_is_valid,
    iter_batch_headers,
    read_batch_header,
)
from kafkalite_server.log.batch_filter import (
    FilteredBatch,
    TransactionTracker,
    filter_batch,
    keys_and_offsets,
)
from kafkalite_server.log.file_io import fsync_directory
from kafkalite_server.log.log import Log, SegmentsChangedError
from kafkalite_server.log.offset_map import LOAD_FACTOR, SLOT_SIZE, OffsetMap
from kafkalite_server.log.segment import (
    CLEANED_SUFFIX,
    MAX_RELATIVE_OFFSET,
    SWAP_SUFFIX,
    LogSegment,
)
from kafkalite_server.log.throttler import Throttler

IO_BUFFER_SIZE = 512 * 1024
"""Kafka's ``log.cleaner.io.buffer.size``: bytes read per chunk."""



class CleaningAbortedError(Exception):
    """The cleaner was asked to stop (broker shutdown); nothing was half-swapped."""


class LogCleaningError(Exception):
    """This log cannot be cleaned (a corrupt batch, an offset map too small); the manager
    stops cleaning it until the broker restarts. The message names the cause."""


@dataclass(frozen=True, slots=True)
class CleaningPlan:
    """Where a pass would work, and how dirty the log is (Kafka's LogToClean)."""

    first_dirty_offset: int
    cleanable_end: int
    clean_bytes: int
    dirty_bytes: int
    overdue: bool
    """The oldest dirty record waited longer than ``max.compaction.lag.ms``."""

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def plan_cleaning(segments: list[LogSegment], log_start_offset: int, first_dirty_offset: int,
                  upper_bound: int, now_ms: int, *, min_compaction_lag_ms: int,
                  max_compaction_lag_ms: int) -> CleaningPlan:
    """The plan for the inactive ``segments`` of a log (oldest first).

    A first dirty offset outside the log (a new log, or truncated below it) restarts at
    the log start offset, as Kafka does.
    """
    log_end = segments[-1].next_offset if segments else log_start_offset
    if not log_start_offset <= first_dirty_offset <= log_end:
        first_dirty_offset = log_start_offset
    end = first_dirty_offset
    clean_bytes = dirty_bytes = 0
    overdue = False
    for segment in segments:
        if segment.next_offset <= first_dirty_offset:
            clean_bytes += segment.size
            continue
        if segment.next_offset > upper_bound or (
                min_compaction_lag_ms > 0
                and now_ms - segment.largest_timestamp < min_compaction_lag_ms):
            break
        if end == first_dirty_offset and segment.size:
            first_time = (segment.first_batch_timestamp if segment.first_batch_timestamp >= 0
                          else segment.largest_timestamp)
            overdue = now_ms - first_time > max_compaction_lag_ms
        end = segment.next_offset
        dirty_bytes += segment.size
    return CleaningPlan(first_dirty_offset, end, clean_bytes, dirty_bytes, overdue)


@dataclass(slots=True)
class CleanerStats:
    """What one pass did; ``bytes_read``/``bytes_written`` feed the throughput figure."""

    bytes_read: int = 0
    bytes_written: int = 0
    records_kept: int = 0
    records_dropped: int = 0
    groups_swapped: int = 0
    segments_removed: int = 0
    delete_horizons: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CleaningResult:
    first_dirty_offset: int
    """The next pass's first dirty offset: where this pass's map ended."""
    stats: CleanerStats

    @property
    def next_delete_horizon(self) -> int | None:
        """When a retained tombstone next expires (None: no tombstone is left)."""
        return min(self.stats.delete_horizons, default=None)


def offset_map_bytes(plan: CleaningPlan, max_bytes: int) -> int:
    """Bytes of a map for ``plan``'s dirty part: room for a key per dirty offset under the
    load factor, at most ``max_bytes`` (a fuller dirty part takes several passes)."""
    dirty_offsets = plan.cleanable_end - plan.first_dirty_offset
    return min(max_bytes, SLOT_SIZE * (int(dirty_offsets / LOAD_FACTOR) + 2))


class Cleaner:
    """Cleans one log at a time (one per cleaner thread), with an offset map of at most
    ``map_bytes`` allocated for each pass."""

    def __init__(self, map_bytes: int, *, throttler: Throttler | None = None,
                 io_buffer_size: int = IO_BUFFER_SIZE,
                 should_stop: Callable[[], bool] = lambda: False,
                 fail_at: Callable[[str], None] = lambda _step: None) -> None:
        """``fail_at`` is called at each step of a group's clean and swap ("write",
        "cleaned", "swap", "replace"); crash tests make it raise."""
        if map_bytes < SLOT_SIZE:
            raise ValueError(f"an offset map needs at least {SLOT_SIZE} bytes, not {map_bytes}")
        self.map_bytes = map_bytes
        self._throttler = throttler
        self._io_buffer_size = io_buffer_size
        self._should_stop = should_stop
        self._fail_at = fail_at

    def clean(self, log: Log, first_dirty_offset: int, upper_bound: int,
              now_ms: int) -> CleaningResult:
        """One pass (see the module docstring). Raises SegmentsChangedError when the log
        changed under it, CleaningAbortedError on stop, LogCleaningError when it cannot."""
        segments, log_start = log.cleanable_segments()
        upper_bound = log.last_stable_offset(upper_bound)  # open transactions stay dirty
        config = log.config
        plan = plan_cleaning(segments, log_start, first_dirty_offset, upper_bound, now_ms,
                             min_compaction_lag_ms=config.min_compaction_lag_ms,
                             max_compaction_lag_ms=config.max_compaction_lag_ms)
        stats = CleanerStats()
        txns = TransactionTracker(log.collect_aborted(log_start, plan.cleanable_end))
        offset_map = OffsetMap(offset_map_bytes(plan, self.map_bytes))
        map_end = self._build_offset_map(offset_map, log, segments, plan, txns, stats)
        retain_empty = log.producer_last_offsets()
        to_clean = [segment for segment in segments if segment.base_offset < map_end]
        for group in group_segments(to_clean, config.segment_bytes,
                                    config.segment_index_bytes):
            self._clean_group(log, group, offset_map, map_end, retain_empty, txns, now_ms,
                              stats, holds_log_start=group[0] is segments[0])
        return CleaningResult(map_end, stats)

    # --------------------------------------------------------------------------- reading

    def _batches(self, log: Log, segment: LogSegment,
                 stats: CleanerStats) -> Iterator[tuple[bytes, BatchHeader]]:
        """(chunk, header) of every batch of an inactive segment, CRC-checked."""
        position = 0
        while position < segment.size:
            if self._should_stop():
                raise CleaningAbortedError("the cleaner is stopping")
            chunk = log.read_for_cleaning(segment, position, self._io_buffer_size)
            used = 0
            try:
                headers = list(iter_batch_headers(chunk))
                if not headers:
                    header = read_batch_header(chunk, 0)
                    if header is None or len(chunk) >= header.size:
                        raise CorruptRecordError(f"unreadable batch at byte {position}",
                                                 segment.base_offset)
                    chunk = log.read_for_cleaning(segment, position, header.size)
                    headers = list(iter_batch_headers(chunk))
            except CorruptRecordError as exc:
                raise LogCleaningError(f"{segment.log_path}: {exc}") from exc
            for header in headers:
                if not batch_crc_is_valid(chunk, header):
                    raise LogCleaningError(f"{segment.log_path}: batch at offset "
                                           f"{header.base_offset} fails its CRC")
                yield chunk, header
                used = header.position + header.size
            if used == 0:
                raise LogCleaningError(f"{segment.log_path}: torn batch at byte {position}")
            position += used
            stats.bytes_read += used
            if self._throttler is not None:
                self._throttler.maybe_throttle(used)

    # ------------------------------------------------------------------------- offset map

    def _build_offset_map(self, offset_map: OffsetMap, log: Log, segments: list[LogSegment],
                          plan: CleaningPlan, txns: TransactionTracker,
                          stats: CleanerStats) -> int:
        """Fill the map from the dirty part; returns the map end (exclusive)."""
        start, end = plan.first_dirty_offset, plan.cleanable_end
        max_bytes = log.decompression_limit.max_bytes
        for segment in segments:
            if segment.next_offset <= start:
                continue
            if segment.base_offset >= end:
                break
            for chunk, header in self._batches(log, segment, stats):
                if header.last_offset < start:
                    continue
                if header.base_offset >= end:
                    return end
                if txns.is_aborted(header):
                    continue
                entries = keys_and_offsets(chunk, header, max_bytes)
                if len(entries) > offset_map.free_entries:
                    if header.base_offset <= start:
                        raise LogCleaningError(
                            f"{log.directory.name}: log.cleaner.dedupe.buffer.size holds "
                            f"{offset_map.slots} keys per cleaner thread, too few for the "
                            f"batch at offset {header.base_offset}")
                    return header.base_offset
                for key, offset in entries:
                    if offset >= start:
                        offset_map.put(key, offset)
        return end

    # --------------------------------------------------------------------------- rewrite

    def _clean_group(self, log: Log, group: list[LogSegment], offset_map: OffsetMap,
                     map_end: int, retain_empty: dict[int, int], txns: TransactionTracker,
                     now_ms: int, stats: CleanerStats, *, holds_log_start: bool) -> None:
        """Clean one group and swap it in. The cleaned segment takes the base offset of the
        group's first segment (Kafka's ``createNewCleanedSegment(segments.head.baseOffset)``).
        A group left with no record goes, except the log's first one (``holds_log_start``):
        it stays as an empty segment, so the first segment still starts at the log start
        offset and compaction never moves it (only retention and DeleteRecords do)."""
        config = log.config
        base = group[0].base_offset
        _remove_leftovers(log, base)
        cleaned = LogSegment(log.directory, base, config, files=log.files, now_ms=now_ms,
                             file_suffix=CLEANED_SUFFIX)
        changed = len(group) > 1
        horizons: list[int] = []
        dropped_markers: set[int] = set()
        kept = dropped = 0
        try:
            for segment in group:
                for chunk, header in self._batches(log, segment, stats):
                    if header.last_offset >= map_end:  # not covered by the map: as it is
                        data = bytes(chunk[header.position:header.position + header.size])
                        cleaned.append(header.base_offset, header.last_offset,
                                       header.max_timestamp, header.last_offset, data)
                        kept += header.record_count
                        continue
                    result = self._filter(chunk, header, offset_map, retain_empty, txns,
                                          now_ms, config.delete_retention_ms,
                                          log.decompression_limit.max_bytes, horizons)
                    if header.is_control and result.data is None:
                        dropped_markers.add(header.base_offset)
                    changed |= result.changed
                    kept += result.kept
                    dropped += result.dropped
                    if result.delete_horizon is not None:
                        horizons.append(result.delete_horizon)
                    if result.data is not None:
                        cleaned.append(header.base_offset, result.last_offset,
                                       result.max_timestamp, result.offset_of_max_timestamp,
                                       result.data)
                        if self._throttler is not None:
                            self._throttler.maybe_throttle(len(result.data))
            self._fail_at("write")
            stats.records_kept += kept
            stats.records_dropped += dropped
            if not changed:
                stats.delete_horizons += horizons
                cleaned.delete_files()
                return
            if cleaned.size == 0 and not holds_log_start:
                cleaned.delete_files()
                log.replace_segments(group, None)
                stats.segments_removed += len(group)
                return
            cleaned.txn_index.replace([
                entry for segment in group for entry in segment.txn_index.entries
                if entry.last_offset not in dropped_markers])
            cleaned.on_become_inactive()
            cleaned.flush()
            stats.bytes_written += cleaned.size
            self._fail_at("cleaned")
            cleaned.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
            fsync_directory(log.directory)
            self._fail_at("swap")
            log.replace_segments(group, cleaned)
            self._fail_at("replace")
        except SegmentsChangedError:
            cleaned.delete_files()
            raise
        except BaseException:
            cleaned.close()  # its files stay for recovery: .cleaned goes, .swap completes
            raise
        stats.delete_horizons += horizons
        stats.groups_swapped += 1
        stats.segments_removed += len(group) - 1


    def _filter(self, chunk: bytes, header: BatchHeader, offset_map: OffsetMap,
                retain_empty: dict[int, int], txns: TransactionTracker, now_ms: int,
                delete_retention_ms: int, max_bytes: int,
                horizons: list[int]) -> FilteredBatch:
        """One batch below the map end through the batch filter, with what the pass knows
        of its transaction. A marker whose transaction this pass emptied asks for another
        pass now (``horizons``), which stamps its delete horizon."""
        empty = emptied = aborted = False
        if header.is_control:
            empty, emptied = txns.on_marker(header)
        else:
            aborted = txns.is_aborted(header)
        result = filter_batch(
            chunk, header, latest=offset_map.get, now_ms=now_ms,
            delete_retention_ms=delete_retention_ms,
            retain_empty=retain_empty.get(header.producer_id) == header.last_offset,
            max_bytes=max_bytes, aborted=aborted, empty_transaction=empty)
        if not header.is_control:
            txns.on_data(header, result.kept)
        if emptied:
            horizons.append(now_ms)
        return result


def _remove_leftovers(log: Log, base: int) -> None:
    """Files of an earlier pass over the same group that stopped before its swap."""
    for path in log.directory.glob(f"{base:020d}.*"):
        if path.name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX)):
            path.unlink(missing_ok=True)


def group_segments(segments: list[LogSegment], max_bytes: int,
                   max_index_bytes: int) -> list[list[LogSegment]]:
    """Adjacent segments grouped so that each group's data fits one segment: total size
    at most ``max_bytes``, index entries within ``max_index_bytes``, offsets within the
    32-bit relative range (Kafka's groupSegmentsBySize)."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size
        entries = segments[i].offset_index.entries
        time_entries = segments[i].time_index.entries
        i += 1
        while i < len(segments):
            candidate = segments[i]
            if (size + candidate.size > max_bytes
                    or (entries + candidate.offset_index.entries) * 8 > max_index_bytes
                    or (time_entries + candidate.time_index.entries + 1) * 12 > max_index_bytes
                    or candidate.next_offset - 1 - group[0].base_offset > MAX_RELATIVE_OFFSET):
                break
            group.append(candidate)
            size += candidate.size
            entries += candidate.offset_index.entries
            time_entries += candidate.time_index.entries
            i += 1
        groups.append(group)
    return groups
