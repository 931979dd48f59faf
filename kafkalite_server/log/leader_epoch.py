"""The leader epoch cache: which leader epoch wrote which offsets (KIP-101).

Entries are (epoch, start offset) with both strictly increasing. OffsetForLeaderEpoch
answers from it, and it is persisted in the partition's ``leader-epoch-checkpoint``.
"""

from __future__ import annotations

import bisect

from kafkalite_server.log.checkpoint import LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """(epoch, start offset) entries, written through to the checkpoint file on change.

    A change is written before it takes effect: a failed write (a full disk) raises and
    leaves the cache as it was, still matching the file.

    A new epoch (:meth:`assign`, at every leader change and in every follower's appends)
    is written without an fsync, which :meth:`flush` does when the log flushes (Kafka's
    KAFKA-15046): the epochs then are as durable as the offsets they start at, and after
    a crash recovery rebuilds those above the recovery point from the batches. Becoming
    leader of 10,000 new partitions costs 10,000 file writes, not 20,000 fsyncs.
    Truncations are written and fsynced at once.
    """

    def __init__(self, checkpoint: LeaderEpochCheckpointFile,
                 entries: list[tuple[int, int]] | None = None) -> None:
        self.checkpoint = checkpoint
        self._unsynced = False
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or []:
            self.assign(epoch, start, persist=False)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int, *, persist: bool = True) -> None:
        """Record that ``epoch`` starts at ``start_offset``.

        A repeat of the latest epoch is a no-op; entries that would break the ordering
        (an epoch or start offset at or above the new one) are removed first.
        """
        if epoch < 0 or (self._epochs and epoch == self._epochs[-1]):
            return
        epochs, starts = self._epochs[:], self._starts[:]
        while epochs and (epochs[-1] >= epoch or starts[-1] >= start_offset):
            epochs.pop()
            starts.pop()
        epochs.append(epoch)
        starts.append(start_offset)
        self._replace(epochs, starts, persist=persist, sync=False)

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest known epoch <= ``epoch``, the offset where the next epoch starts).

        The latest epoch ends at the log end offset; an epoch above every known one gives
        (-1, -1), as Kafka's LeaderEpochFileCache.endOffsetFor does.
        """
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor_epoch = self._epochs[higher - 1] if higher > 0 else epoch
        return floor_epoch, self._starts[higher]

    def truncate_from_end(self, end_offset: int, *, persist: bool = True) -> None:
        """The log was cut at ``end_offset``: drop epochs starting at or after it."""
        keep = bisect.bisect_left(self._starts, end_offset)
        if keep < len(self._starts):
            self._replace(self._epochs[:keep], self._starts[:keep], persist=persist)

    def truncate_from_start(self, start_offset: int, *, persist: bool = True) -> None:
        """The log start moved to ``start_offset``: drop epochs wholly below it, clamp one."""
        covering = bisect.bisect_right(self._starts, start_offset) - 1
        if covering < 0 or (covering == 0 and self._starts[0] == start_offset):
            return
        starts = self._starts[covering:]
        starts[0] = start_offset
        self._replace(self._epochs[covering:], starts, persist=persist)

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()

    def persist(self, *, sync: bool = True) -> None:
        self.checkpoint.write(self.entries, sync=sync)
        self._unsynced = not sync

    def flush(self) -> None:
        """fsync a checkpoint written without one (safe from the log's flush thread)."""
        if self._unsynced:
            self._unsynced = False  # first: a write meanwhile sets it again
            self.checkpoint.sync()

    def _replace(self, epochs: list[int], starts: list[int], *, persist: bool = True,
                 sync: bool = True) -> None:
        if persist:
            self.checkpoint.write(list(zip(epochs, starts, strict=True)), sync=sync)
            self._unsynced = not sync
        self._epochs, self._starts = epochs, starts
