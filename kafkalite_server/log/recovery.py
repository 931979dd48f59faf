"""Loading a partition directory into segments, repairing what a crash left behind.

Follows Kafka's LogLoader: remove temp files, complete interrupted compaction swaps, find
every segment, rebuild any index that is missing or fails its sanity check (kafkalite
checks every segment, not only the tail), and after an unclean shutdown re-scan from the
segment holding the recovery point to the end, cutting the log at the first torn or
corrupt batch and dropping every later segment.

Nothing but the active segment is read at load: the others are lazy segments (their size
is all that is known) that load, check and repair their indexes on first use (Kafka's
lazy indexes, KAFKA-7283), and the directory is listed once. Start-up reads and opens the
same few files per partition however many segments it holds, and writes nothing when the
last stop was clean.

Swaps. The cleaner renames a cleaned segment from ``.cleaned`` to ``.swap`` only once it
is complete and fsynced, so a ``.swap`` log file is the commit point of a cleaning: a
``.cleaned`` file is an unfinished one and goes; a ``.swap`` replaces every old segment
whose base offset lies in its offset range (some may already be renamed ``.deleted`` or
gone), then takes its final name. A crash at any step thus ends with either the old
segments or the cleaned one, never both and never neither.

Producer state. The newest valid ``.snapshot`` at or below the log end is restored and
only the batches after it are replayed (:func:`load_producer_state`), so loading reads at
most the segments written since the last roll or shutdown. Replay also re-adds any
aborted transaction whose marker reached the log but not the segment's ``.txnindex``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from kafkalite.records.control import read_marker
from kafkalite_server.log.checkpoint import CorruptCheckpointError, LeaderEpochCheckpointFile
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.file_io import Pwrite
from kafkalite_server.log.leader_epoch import LeaderEpochCache
from kafkalite_server.log.open_files import OpenFileCache, cache_or_private
from kafkalite_server.log.producer_snapshot import (
    CorruptSnapshotError,
    decode_snapshot,
    snapshot_offsets,
    snapshot_path,
)
from kafkalite_server.log.producer_state import ProducerStateManager
from kafkalite_server.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
)
from kafkalite_server.log.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
_TEMP_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, ".tmp")

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class LoadedLog:
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    leader_epoch_cache: LeaderEpochCache
    producer_state: ProducerStateManager


def load_log(directory: Path, config: LogConfig, *, recovery_point: int, log_start_offset: int,
             clean_shutdown: bool, now_ms: int, pwrite: Pwrite = os.pwrite,
             files: OpenFileCache | None = None,
             producer_expiration_ms: int | None = None) -> LoadedLog:
    """Open (or create) the partition directory and return consistent state; producers
    idle for ``producer_expiration_ms`` (None: never) are not loaded."""
    files = cache_or_private(files)
    directory.mkdir(parents=True, exist_ok=True)
    names = os.listdir(directory)
    _remove_temp_files(directory, names)
    if any(name.endswith(SWAP_SUFFIX) for name in names):
        _complete_swaps(directory, config, now_ms, files)
        names = os.listdir(directory)
    bases = _segment_base_offsets(directory, names)
    segments = [LogSegment(directory, base, config, files=files, now_ms=now_ms, pwrite=pwrite,
                           lazy=i < len(bases) - 1) for i, base in enumerate(bases)]
    if segments:
        segments[-1].repair_if_needed(inactive=False)  # lazy ones repair on first use
    epochs, epochs_trusted = _read_epoch_checkpoint(directory, names)
    read_epochs = epochs.entries
    if not clean_shutdown:
        segments = _recover_tail(segments, config, recovery_point, epochs)
    if not epochs_trusted:
        epochs.clear()
        for segment in segments:
            for _, header in segment.iter_batches():
                epochs.assign(header.partition_leader_epoch, header.base_offset, persist=False)
    log_end = segments[-1].next_offset if segments else log_start_offset
    if log_end < log_start_offset:
        for segment in segments:
            segment.delete_files()
        segments = []
    if not segments:
        segments = [LogSegment(directory, log_start_offset, config, files=files, now_ms=now_ms,
                               pwrite=pwrite)]
    for inactive in segments[:-1]:  # a recovered time index gets its final entry back
        if inactive.loaded:
            inactive.on_become_inactive()
    log_start_offset = max(log_start_offset, segments[0].base_offset)
    log_end = segments[-1].next_offset
    epochs.truncate_from_end(log_end, persist=False)
    epochs.truncate_from_start(log_start_offset, persist=False)
    if epochs.entries != read_epochs or (not epochs_trusted and epochs.checkpoint.path.exists()):
        epochs.persist(sync=False)  # rebuilt from the log: a crash now rebuilds it again
    producers = load_producer_state(directory, segments, log_start_offset, names)
    if producer_expiration_ms is not None:
        producers.remove_expired(now_ms, producer_expiration_ms)
    return LoadedLog(segments, log_start_offset,
                     log_end if clean_shutdown else min(recovery_point, log_end),
                     epochs, producers)


def _remove_temp_files(directory: Path, names: list[str]) -> None:
    for name in names:
        if name.endswith(_TEMP_SUFFIXES):
            path = directory / name
            if path.is_file():
                path.unlink()


def _complete_swaps(directory: Path, config: LogConfig, now_ms: int,
                    files: OpenFileCache) -> None:
    """Finish every interrupted swap (see the module docstring), lowest offset first."""
    log_swap = LOG_SUFFIX + SWAP_SUFFIX
    swapped = sorted(int(path.name[:-len(log_swap)]) for path in directory.glob(f"*{log_swap}")
                     if path.name[:-len(log_swap)].isdigit())
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):  # without a log: junk
        for path in directory.glob(f"*{suffix}{SWAP_SUFFIX}"):
            stem = path.name[:-len(suffix + SWAP_SUFFIX)]
            if not stem.isdigit() or int(stem) not in swapped:
                path.unlink()
    for base in swapped:
        segment = LogSegment(directory, base, config, files=files, now_ms=now_ms,
                             file_suffix=SWAP_SUFFIX)
        try:
            if segment.index_problem is not None or segment.needs_recovery:
                segment.recover(config.max_message_bytes)  # an index was renamed already
            end = segment.next_offset
            replaced = [old for old in _segment_base_offsets(directory, os.listdir(directory))
                        if base <= old < end]
            for old in replaced:
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                    (directory / f"{old:020d}{suffix}").unlink(missing_ok=True)
            segment.change_suffix(SWAP_SUFFIX, "")
            logger.info("completed the swap of cleaned segment %s for %d old segments",
                        segment.log_path, len(replaced))
        finally:
            segment.close()


def _segment_base_offsets(directory: Path, names: list[str]) -> list[int]:
    """Base offsets of the ``.log`` files among ``names``; orphan index files are deleted."""
    bases = set()
    indexes = []
    for name in names:
        stem, dot, suffix = name.partition(".")
        if not dot or not stem.isdigit():
            continue
        if "." + suffix == LOG_SUFFIX:
            bases.add(int(stem))
        elif "." + suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            indexes.append((int(stem), name))
    for base, name in indexes:
        if base not in bases:
            (directory / name).unlink()
    return sorted(bases)


def _read_epoch_checkpoint(directory: Path,
                           names: list[str]) -> tuple[LeaderEpochCache, bool]:
    """The cache and whether its file could be trusted (missing or corrupt: rebuild)."""
    checkpoint = LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT)
    if LEADER_EPOCH_CHECKPOINT not in names:
        return LeaderEpochCache(checkpoint), False
    try:
        return LeaderEpochCache(checkpoint, checkpoint.read()), True
    except CorruptCheckpointError as exc:
        logger.warning("rebuilding the leader epoch cache: %s", exc)
        return LeaderEpochCache(checkpoint), False


def _recover_tail(segments: list[LogSegment], config: LogConfig, recovery_point: int,
                  epochs: LeaderEpochCache) -> list[LogSegment]:
    """Re-scan from the segment holding the recovery point; cut at the first damage."""
    first = max((i for i, segment in enumerate(segments)
                 if segment.base_offset <= recovery_point), default=0)
    if first < len(segments):
        epochs.truncate_from_end(segments[first].base_offset, persist=False)
    for i in range(first, len(segments)):
        segment = segments[i]
        truncated = segment.recover(
            config.max_message_bytes,
            lambda header: epochs.assign(header.partition_leader_epoch, header.base_offset,
                                         persist=False))
        if truncated:
            logger.warning("truncated %d bytes of %s; dropping %d later segments",
                           truncated, segment.log_path, len(segments) - i - 1)
            for later in segments[i + 1:]:
                later.delete_files()
            return segments[:i + 1]
    return segments


def load_producer_state(directory: Path, segments: list[LogSegment], log_start_offset: int,
                        names: list[str] | None = None) -> ProducerStateManager:
    """Restore the newest usable snapshot, then replay the batches after it (``names``:
    the directory's entries, when the caller has listed it)."""
    log_end = segments[-1].next_offset
    offsets = []
    for offset in snapshot_offsets(directory, names):
        if log_start_offset <= offset <= log_end:
            offsets.append(offset)
        else:
            snapshot_path(directory, offset).unlink(missing_ok=True)
    state, replay_from = ProducerStateManager(), segments[0].base_offset
    for offset in reversed(offsets):
        path = snapshot_path(directory, offset)
        try:
            state = ProducerStateManager.from_snapshot(decode_snapshot(path.read_bytes()))
        except (OSError, CorruptSnapshotError) as exc:
            logger.warning("ignoring producer snapshot %s: %s", path, exc)
            path.unlink(missing_ok=True)
            continue
        replay_from = offset
        break
    replay_producer_state(state, segments, replay_from)
    return state


def replay_producer_state(state: ProducerStateManager, segments: list[LogSegment],
                          start: int) -> None:
    """Feed every batch at or after ``start`` to ``state``; an abort marker missing from
    its segment's transaction index (a crash between the two writes) is added."""
    first = max((i for i, segment in enumerate(segments) if segment.base_offset <= start),
                default=0)  # earlier segments end below ``start``: not even loaded
    for segment in segments[first:]:
        for position, header in segment.iter_batches():
            if header.last_offset < start:
                continue
            marker = None
            if header.is_control:
                marker = read_marker(segment.read_batch(position, header))
            completed = state.load_batch(header, marker)
            if completed is None or not completed.aborted:
                continue
            index = segment.txn_index
            if index.entries and index.entries[-1].last_offset >= completed.last_offset:
                continue
            unstable = state.first_unstable_offset()
            stable = completed.last_offset + 1
            index.append(AbortedTxn(completed.producer_id, completed.first_offset,
                                    completed.last_offset,
                                    stable if unstable is None else min(unstable, stable)))
