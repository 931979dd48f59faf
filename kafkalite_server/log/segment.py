"""One log segment: a ``.log`` file of record batches plus its offset, time and aborted-
transaction indexes.

Batches are stored exactly as the leader accepted them (v2 RecordBatch or legacy
message entries); the segment only reads their headers. Lookups go index first (binary
search to the nearest entry at or below the target), then a forward scan of batch
headers in the ``.log`` from that position.

Files are bounded resources: every file of a segment is opened on demand through the
broker's :class:`~kafkalite_server.log.open_files.OpenFileCache`, so a segment pins no
descriptor. A segment found at start-up is *lazy*: it knows only its name until something
asks for its size (one ``stat``) or its offsets and timestamps; then it reads its indexes, checks
them against the log and finds its next offset, exactly as an eagerly opened segment does
at once (:meth:`LogSegment._load`). A broker with a million segments starts without
reading them, and one that never reads an old segment never loads it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.primitives import INT32_MAX
from kafkalite.records.batch_header import (
    V2_HEADER_SIZE,
    BatchHeader,
    batch_crc_is_valid,
    read_batch_header,
)
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.file_io import Pwrite, write_fully
from kafkalite_server.log.file_region import FileRegion
from kafkalite_server.log.index import CorruptIndexError, OffsetIndex, TimeIndex
from kafkalite_server.log.open_files import CachedFile, OpenFileCache, cache_or_private
from kafkalite_server.log.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
"""Kafka's temporary suffixes of a compaction: a cleaned segment is written as
``.cleaned``, renamed ``.swap`` once complete and durable, and renamed to its final name
when it has replaced the old segments (recovery completes a left-over ``.swap``)."""
MAX_RELATIVE_OFFSET = INT32_MAX
_LOADED_STATE = frozenset({"next_offset", "first_batch_timestamp", "max_timestamp_so_far",
                           "offset_of_max_timestamp", "_bytes_since_index_entry",
                           "index_problem", "needs_recovery"})
"""What a lazy segment learns when it loads (see :meth:`LogSegment.__getattr__`)."""

logger = logging.getLogger(__name__)


def segment_file_name(base_offset: int, suffix: str) -> str:
    """Kafka's name: the base offset as 20 zero-padded digits, so ``ls`` sorts by offset."""
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """A ``<base>.log`` with its ``.index`` and ``.timeindex``; opened or created."""

    size: int
    """Bytes of the ``.log`` (a lazy segment reads it on first use)."""
    next_offset: int
    first_batch_timestamp: int
    max_timestamp_so_far: int
    offset_of_max_timestamp: int
    _bytes_since_index_entry: int
    index_problem: str | None
    """Why the indexes were dropped on load (missing, or failing a check); the loader
    rebuilds them from the log."""
    needs_recovery: bool
    """A batch header past the last index entry could not be read."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, *,
                 files: OpenFileCache | None = None, now_ms: int = 0,
                 pwrite: Pwrite = os.pwrite, file_suffix: str = "", roll_jitter_ms: int = 0,
                 lazy: bool = False) -> None:
        """Open (or create) the files. Indexes that fail :meth:`sanity_check` are emptied
        and :attr:`index_problem` says why: the loader rebuilds them from the log.

        ``files`` is the broker's cache of open files (without it the segment gets a
        cache of its own). ``lazy`` (an existing segment found at start-up, not the
        active one) defers every read to first use, and a lazy segment repairs damaged
        indexes itself when it loads. ``file_suffix`` (``.cleaned``, ``.swap``) follows
        every file name: the cleaner writes its output segments under it.
        ``roll_jitter_ms`` is subtracted from ``segment.ms`` (``segment.jitter.ms``
        spreads the rolls of many partitions)."""
        self.directory = directory
        self.base_offset = base_offset
        self.config = config
        self.roll_jitter_ms = roll_jitter_ms
        self.created_ms = now_ms
        self._pwrite = pwrite
        files = cache_or_private(files)
        stem = os.path.join(directory, f"{base_offset:020d}")  # text: Paths cost 20 us each
        self._log = CachedFile(files, f"{stem}{LOG_SUFFIX}{file_suffix}", create=not lazy)
        self._offset_index = OffsetIndex(f"{stem}{INDEX_SUFFIX}{file_suffix}", base_offset,
                                         config.segment_index_bytes, files=files, pwrite=pwrite)
        self._time_index = TimeIndex(f"{stem}{TIME_INDEX_SUFFIX}{file_suffix}", base_offset,
                                     config.segment_index_bytes, files=files, pwrite=pwrite)
        self.txn_index = TransactionIndex(f"{stem}{TXN_INDEX_SUFFIX}{file_suffix}")
        self._closed = False
        self.loaded = False
        """Whether the segment has read its indexes and found its next offset."""
        self._loading = False
        if not lazy:
            self.size = self._log.size()
            self._load()

    @property
    def log_path(self) -> Path:
        return self._log.path

    @property
    def offset_index(self) -> OffsetIndex:
        self.load()
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        self.load()
        return self._time_index

    def __getattr__(self, name: str) -> Any:
        """A lazy segment's size (one ``stat``), and its offsets and timestamps: the first
        read of one loads them all (Python calls this only for attributes not set yet)."""
        if name == "size":
            self.size = os.stat(self._log.fspath).st_size
            return self.size
        if name not in _LOADED_STATE or self._loading:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.load()
        return object.__getattribute__(self, name)

    def load(self) -> None:
        """Read and check the indexes and find the offsets now, if not done yet, repairing
        what a check finds (a lazy segment does this on first use).

        Loads run under the owning log's lock (every Log method that reaches a segment
        holds it, and the cleaner gets its segments loaded), so one thread at a time."""
        if self.loaded or self._loading:
            return
        self._load()
        self.repair_if_needed(inactive=True)

    def _load(self) -> None:
        """Read and check the indexes, then find the next offset and max timestamp."""
        self._loading = True
        try:
            self.index_problem = None
            if self.size > 0 and not (os.path.exists(self._offset_index.fspath)
                                      and os.path.exists(self._time_index.fspath)):
                self.index_problem = "index file missing"
            self.needs_recovery = False
            try:
                self._check_index_entries()
            except CorruptIndexError as exc:
                self._drop_indexes(str(exc))
            self._load_tail_state()
            if self.index_problem is None and not self.needs_recovery:
                try:
                    self._check_entries_against_log()
                except CorruptIndexError as exc:
                    self._drop_indexes(str(exc))
                    self._load_tail_state()
            self.loaded = True
        finally:
            self._loading = False

    def repair_if_needed(self, *, inactive: bool) -> None:
        """After a load: rebuild the indexes from the log when they were found missing or
        damaged (or a batch header past the last entry did not read); an ``inactive``
        segment then gets back the final time-index entry it had."""
        reason = self.index_problem
        if reason is None and self.needs_recovery:
            reason = "unreadable batch header"
        if reason is not None:
            logger.warning("rebuilding indexes of %s: %s", self.log_path, reason)
            self.recover(self.config.max_message_bytes)
            if inactive:
                self.on_become_inactive()

    # ----------------------------------------------------------------------------- scanning

    def _header_at(self, position: int, fd: int | None = None) -> BatchHeader | None:
        """The complete entry header at ``position``; ``None`` past the end or torn.
        ``fd``: the caller's descriptor of the ``.log`` (it holds the handle)."""
        if fd is None:
            raw = self._log.pread(V2_HEADER_SIZE, position)
        else:
            raw = os.pread(fd, V2_HEADER_SIZE, position)
        header = read_batch_header(raw, 0)
        if header is None or position + header.size > self.size:
            return None
        return header

    def iter_batches(self, position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each complete batch from ``position`` on."""
        if position >= self.size:
            return
        handle = self._log.handle()
        while position < self.size:
            header = self._header_at(position, handle.fileno())
            if header is None:
                return
            yield position, header
            position += header.size

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The batch holding ``offset`` (or the first one after it), found via the index."""
        self.load()
        _, position = self._offset_index.lookup(offset)
        for batch_position, header in self.iter_batches(position):
            if header.last_offset >= offset:
                return batch_position, header
        return None

    def _load_tail_state(self) -> None:
        """Next offset and max timestamp, from the last index entries plus a short scan.

        The indexes have passed their entry checks (or were emptied), so every position
        they give lies inside the log.
        """
        self.next_offset = self.base_offset
        self.first_batch_timestamp = -1
        self.max_timestamp_so_far, self.offset_of_max_timestamp = self._time_index.last_entry
        _, position = self._offset_index.lookup(self._offset_index.last_offset)
        self._bytes_since_index_entry = self.size - position
        if self.size == 0:
            return
        try:
            first = self._header_at(0)
            self.first_batch_timestamp = first.max_timestamp if first is not None else -1
            for _, header in self.iter_batches(position):
                self._observe_timestamp(header)
                self.next_offset = header.next_offset
        except CorruptRecordError:
            self.needs_recovery = True

    def _observe_timestamp(self, header: BatchHeader) -> None:
        if header.max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset

    # ------------------------------------------------------------------------------ writing

    def append(self, first_offset: int, last_offset: int, max_timestamp: int,
               offset_of_max_timestamp: int, batch: bytes | bytearray | memoryview) -> None:
        """Write validated, offset-stamped batches and add index entries by Kafka's rule.

        The byte counter since the last entry is checked *before* this write is counted,
        so the first batch of a segment never gets an entry; the entry maps this write's
        last offset to its start position.
        """
        if last_offset - self.base_offset > MAX_RELATIVE_OFFSET or first_offset < self.base_offset:
            raise ValueError(f"offsets {first_offset}..{last_offset} do not fit segment "
                             f"{self.base_offset}")
        position = self.size
        before = (self.first_batch_timestamp, self.max_timestamp_so_far,
                  self.offset_of_max_timestamp, self._bytes_since_index_entry,
                  self._offset_index.entries, self._time_index.entries)
        try:
            handle = self._log.handle()
            write_fully(self._pwrite, handle.fileno(), batch, position)
            if position == 0:
                self.first_batch_timestamp = max_timestamp
            if max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = max_timestamp
                self.offset_of_max_timestamp = offset_of_max_timestamp
            if self._bytes_since_index_entry > self.config.index_interval_bytes:
                self._add_index_entries(last_offset, position)
        except OSError:
            self._roll_back(position, before)
            raise
        self._bytes_since_index_entry += len(batch)
        self.size = position + len(batch)
        self.next_offset = last_offset + 1

    def _roll_back(self, size: int, before: tuple[int, int, int, int, int, int]) -> None:
        """Undo a failed append: the log and both indexes back to their last good size.

        Shrinking a file needs no free space; should it fail anyway, the bytes past
        ``size`` are an unacknowledged tail that recovery cuts at the next start.
        """
        (self.first_batch_timestamp, self.max_timestamp_so_far, self.offset_of_max_timestamp,
         self._bytes_since_index_entry, index_entries, time_index_entries) = before
        try:
            self._log.truncate(size)
            self._offset_index.truncate_entries(index_entries)
            self._time_index.truncate_entries(time_index_entries)
        except OSError as exc:
            logger.error("cannot cut %s back to %d bytes after a failed write: %s",
                         self.log_path, size, exc)

    def _add_index_entries(self, last_offset: int, position: int) -> None:
        if self._offset_index.is_full or self._time_index.is_full:
            return  # only in recovery under a smaller segment.index.bytes: a sparser index
        self._offset_index.append(last_offset, position)
        self._time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
        self._bytes_since_index_entry = 0

    def should_roll(self, batch_size: int, max_timestamp: int, last_offset: int,
                    now_ms: int) -> bool:
        """Kafka's roll rule: full by size, too old, an index full, or offsets overflow.

        Age is the incoming batch's timestamp minus the first batch's (wall-clock time
        since creation when the segment has no timestamps), as in Kafka.
        """
        if self.size == 0:
            return False
        if self.first_batch_timestamp >= 0:
            age = max_timestamp - self.first_batch_timestamp
        else:
            age = now_ms - self.created_ms
        return (self.size > self.config.segment_bytes - batch_size
                or age > self.config.segment_ms - self.roll_jitter_ms
                or self._offset_index.is_full or self._time_index.is_full
                or last_offset - self.base_offset > MAX_RELATIVE_OFFSET)

    def on_become_inactive(self) -> None:
        """Called on roll: the final time-index entry records the segment's max timestamp."""
        self.load()
        if self.max_timestamp_so_far >= 0:
            self._time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp,
                                         skip_full_check=True)

    # ------------------------------------------------------------------------------ reading

    def read(self, start_offset: int, max_bytes: int, max_position: int | None = None,
             min_one_batch: bool = True) -> FileRegion | None:
        """Whole batches from the one holding ``start_offset``, up to ``max_bytes``.

        ``max_position`` (a batch boundary: where the high watermark's batch starts) is
        never passed. With ``min_one_batch`` the first batch comes whole even if larger
        than ``max_bytes``. ``None`` when nothing qualifies.
        """
        self.load()
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start, _ = found
        limit = self.size if max_position is None else min(max_position, self.size)
        if limit - start <= max_bytes:
            length = limit - start
        else:
            budget_end = start + max_bytes  # below limit here
            end = max(start, self._offset_index.floor_position(budget_end))
            for position, header in self.iter_batches(end):
                batch_end = position + header.size
                if batch_end > budget_end:
                    if position == start and min_one_batch:
                        end = batch_end
                    break
                end = batch_end
            length = end - start
        return FileRegion(self._log.handle(), start, length) if length > 0 else None

    def read_batch(self, position: int, header: BatchHeader) -> bytes:
        return self.read_bytes(position, header.size)

    def read_bytes(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes of the ``.log`` from ``position``."""
        return self._log.pread(size, position)

    def find_offset_by_timestamp(self, timestamp: int,
                                 start_offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch at or after ``start_offset`` whose max timestamp reaches
        ``timestamp``, as (position, header); the caller finds the record inside it."""
        self.load()
        _, indexed_offset = self._time_index.lookup(timestamp)
        _, position = self._offset_index.lookup(max(indexed_offset, start_offset))
        for batch_position, header in self.iter_batches(position):
            if header.max_timestamp >= timestamp and header.last_offset >= start_offset:
                return batch_position, header
        return None

    @property
    def largest_timestamp(self) -> int:
        """Max record timestamp, or the file's mtime when no batch has a timestamp."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return int(os.stat(self.log_path).st_mtime * 1000)

    # ----------------------------------------------------------------------------- recovery

    def sanity_check(self) -> None:
        """Both indexes against the log, as on load; raises CorruptIndexError."""
        self.load()
        self._check_index_entries()
        self._check_entries_against_log()

    def _check_index_entries(self) -> None:
        """Every entry in order and every position inside the log (no log reads)."""
        self._offset_index.sanity_check(self.size)
        self._time_index.sanity_check()

    def _check_entries_against_log(self) -> None:
        """Every entry of both indexes agrees with the batches it points at.

        An offset entry maps the last offset of one append to the position where that
        append starts: a batch boundary whose batch begins after the previous entry's
        offset and ends at or before this one's. Then a lookup never starts a scan past
        the batch it wants. A time entry (max timestamp so far, offset holding it) names
        a batch whose max timestamp is that timestamp. One header read per entry, on load
        only: random damage that leaves the columns sorted must not skip records.
        """
        previous = self.base_offset - 1
        for n in range(self._offset_index.entries):
            relative, position = self._offset_index.entry(n)
            offset = self.base_offset + relative
            header = self._readable_header_at(position)
            if (header is None or header.base_offset <= previous
                    or not header.last_offset <= offset < self.next_offset):
                raise CorruptIndexError(f"{self._offset_index.path.name}: entry "
                                        f"({offset}, {position}) does not match the log")
            previous = offset
        for n in range(self._time_index.entries):
            timestamp, relative = self._time_index.entry(n)
            offset = self.base_offset + relative
            try:
                found = self.translate_offset(offset) if offset < self.next_offset else None
            except CorruptRecordError:
                found = None
            if found is None or found[1].max_timestamp != timestamp:
                raise CorruptIndexError(f"{self._time_index.path.name}: entry "
                                        f"({timestamp}, {offset}) does not match the log")

    def _readable_header_at(self, position: int) -> BatchHeader | None:
        try:
            return self._header_at(position)
        except CorruptRecordError:
            return None

    def _drop_indexes(self, reason: str) -> None:
        """Empty both indexes (a damaged one cannot be trusted for any lookup)."""
        self.index_problem = reason
        self._offset_index.reset()
        self._time_index.reset()

    def recover(self, max_message_bytes: int,
                on_batch: Callable[[BatchHeader], None] | None = None) -> int:
        """Re-scan the log, checking every batch, and rebuild both indexes.

        Stops at the first torn, oversized, CRC-failing or out-of-range batch and truncates
        the ``.log`` there. Returns the number of bytes cut off. ``on_batch`` sees each
        valid batch (the log rebuilds its leader-epoch cache and producer state from it).
        """
        self._offset_index.reset()
        self._time_index.reset()
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp = self.base_offset
        self.next_offset = self.base_offset
        self.first_batch_timestamp = -1
        self._bytes_since_index_entry = 0
        self.index_problem = None
        valid = 0
        while valid < self.size:
            header = self._valid_batch_at(valid, max_message_bytes)
            if header is None:
                break
            if valid == 0:
                self.first_batch_timestamp = header.max_timestamp
            self._observe_timestamp(header)
            if self._bytes_since_index_entry > self.config.index_interval_bytes:
                self._add_index_entries(header.last_offset, valid)
            self._bytes_since_index_entry += header.size
            self.next_offset = header.next_offset
            if on_batch is not None:
                on_batch(header)
            valid += header.size
        truncated = self.size - valid
        if truncated:
            self._log.truncate(valid)
            self.size = valid
        self._offset_index.trim_to_valid_size()
        self._time_index.trim_to_valid_size()
        self.needs_recovery = False
        self.loaded = True
        return truncated

    def _valid_batch_at(self, position: int, max_message_bytes: int) -> BatchHeader | None:
        raw = self._log.pread(V2_HEADER_SIZE, position)
        try:
            header = read_batch_header(raw, 0)
        except CorruptRecordError:
            return None
        if (header is None or position + header.size > self.size
                or header.size > max_message_bytes or header.base_offset < self.base_offset
                or header.last_offset < self.next_offset
                or header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET):
            return None
        data = self._log.pread(header.size, position)
        return header if batch_crc_is_valid(data, header) else None

    def truncate_to(self, offset: int) -> int:
        """Cut the batch holding ``offset`` and everything after; returns bytes removed."""
        self.load()
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, _ = found
        self._offset_index.truncate_to(offset)
        self._time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.size - position
        self._log.truncate(position)
        self.size = position
        self.next_offset = self.base_offset
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp = self.base_offset
        self.first_batch_timestamp = -1
        self._bytes_since_index_entry = 0
        self._load_tail_state()
        return removed

    # ---------------------------------------------------------------------------- lifecycle

    def flush(self) -> None:
        """fsync the log and both indexes (safe from a worker thread while appends go on).

        A segment closed meanwhile (deleted by retention) has nothing left to flush.
        """
        if self._closed:
            return
        try:
            self._log.fsync()
        except FileNotFoundError:
            if self._closed:  # closed and unlinked by the loop thread since the check
                return
            raise
        self._offset_index.flush()
        self._time_index.flush()
        self.txn_index.flush()

    def mark_deleted(self) -> None:
        """Rename the files to ``*.deleted``; open handles (and regions) stay readable."""
        self.change_suffix("", DELETED_SUFFIX)

    def change_suffix(self, old: str, new: str) -> None:
        """Rename every file from ``<name><old>`` to ``<name><new>`` (log file last, so
        that a crash in between leaves the ``.log`` under the old suffix with its indexes
        either renamed or not: recovery rebuilds a missing index)."""
        for renamer, path in ((self._offset_index.rename, self._offset_index.path),
                              (self._time_index.rename, self._time_index.path),
                              (self.txn_index.rename, self.txn_index.path),
                              (self._rename_log, self.log_path)):
            if not path.name.endswith(old):
                raise ValueError(f"{path.name} does not end with {old!r}")
            renamer(path.with_name(path.name[:len(path.name) - len(old)] + new))

    def _rename_log(self, path: Path) -> None:
        self._log.rename(path)

    def delete_files(self) -> None:
        """Close and unlink every file of the segment."""
        self.close()
        for path in (self.log_path, self._offset_index.path, self._time_index.path,
                     self.txn_index.path):
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Give back every descriptor (a region being sent keeps its own until sent)."""
        self._closed = True
        self._log.release()
        self._offset_index.close()
        self._time_index.close()

    def __repr__(self) -> str:
        next_offset = self.next_offset if self.loaded else "?"
        return f"LogSegment({self.log_path.name}, size={self.size}, next={next_offset})"
