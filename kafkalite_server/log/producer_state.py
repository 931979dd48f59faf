"""Producer state of one partition: per producer id its epoch, its last five batches and
its open transaction.

Idempotence: a retried batch (same producer, epoch and sequence range as one of the last
five) is answered with the offsets it got the first time instead of being appended again;
a sequence gap or an older epoch is rejected. This is what makes ``enable.idempotence``
(on by default in kafka-python 3 and the Java client) exactly-once per partition.

Transactions: a producer's first transactional batch opens its transaction at that
offset; the coordinator's marker (see :mod:`kafkalite.records.control`) closes it. The
smallest open first offset is the partition's first unstable offset, which bounds the
last stable offset (what read_committed consumers may read). A marker from an older
producer epoch is INVALID_PRODUCER_EPOCH, from an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED; a non-transactional batch from a producer with an open
transaction is INVALID_TXN_STATE.

State survives restarts through snapshots (:mod:`kafkalite_server.log.producer_snapshot`):
the loader restores the newest one and replays the batches after it.

Expiry (Kafka's ``producer.id.expiration.ms``, one day): a producer without an open
transaction whose last batch is that much older than now (by its max record timestamp,
as Kafka measures) is forgotten, so the table does not grow with every producer that ever
wrote; a later batch of an expired producer is taken as a new producer's. The broker runs
:meth:`ProducerStateManager.remove_expired` every
``producer.id.expiration.check.interval.ms``; the loader drops expired entries too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkalite.protocol.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)
from kafkalite.protocol.primitives import INT32_MAX
from kafkalite.records.batch_header import BatchHeader
from kafkalite.records.control import Marker
from kafkalite_server.log.producer_snapshot import SnapshotBatch, SnapshotEntry

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_OFFSET = -1
BATCHES_KEPT = 5


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_KEPT))
    coordinator_epoch: int = -1
    current_txn_first_offset: int = NO_OFFSET
    last_timestamp: int = -1

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


def is_expired(entry: ProducerEntry, now_ms: int, expiration_ms: int) -> bool:
    """Kafka's rule: no open transaction, and the last batch's max timestamp (-1: none)
    at least ``expiration_ms`` before now."""
    return (entry.current_txn_first_offset == NO_OFFSET
            and now_ms - entry.last_timestamp >= expiration_ms)


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker just closed: its first offset and the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


def _next_sequence(sequence: int) -> int:
    """Sequences wrap from Int32.MAX to 0."""
    return 0 if sequence == INT32_MAX else sequence + 1


def _last_sequence(header: BatchHeader) -> int:
    last = header.base_sequence + header.last_offset - header.base_offset
    return last - INT32_MAX - 1 if last > INT32_MAX else last


class ProducerStateManager:
    """Producer id -> :class:`ProducerEntry` for one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}
        """Producer id -> first offset of its open transaction."""

    # ------------------------------------------------------------------ data batches

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate an incoming batch's epoch and sequence before it gets offsets.

        Returns the original batch when this one is a retry of it (a duplicate), ``None``
        when it is new and in order; raises InvalidProducerEpochError,
        OutOfOrderSequenceNumberError or InvalidTxnStateError otherwise.
        """
        if header.producer_id == NO_PRODUCER_ID:
            return None
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(f"producer {header.producer_id} epoch "
                                            f"{header.producer_epoch} is older than "
                                            f"{entry.epoch}")
        if (not header.is_transactional
                and entry.current_txn_first_offset != NO_OFFSET):
            raise InvalidTxnStateError(f"producer {header.producer_id} wrote a "
                                       "non-transactional batch inside its open transaction")
        if header.base_sequence < 0:
            return None
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequenceNumberError(
                    f"producer {header.producer_id} new epoch {header.producer_epoch} starts "
                    f"at sequence {header.base_sequence}, not 0")
            return None
        last_sequence = _last_sequence(header)
        for batch in entry.batches:
            if (batch.first_sequence, batch.last_sequence) == (header.base_sequence,
                                                               last_sequence):
                return batch
        expected = _next_sequence(entry.last_sequence)
        if entry.batches and header.base_sequence != expected:
            raise OutOfOrderSequenceNumberError(
                f"producer {header.producer_id} sent sequence {header.base_sequence}, "
                f"expected {expected}")
        return None

    def update(self, header: BatchHeader, first_offset: int, last_offset: int) -> None:
        """Remember a data batch that was appended at ``first_offset..last_offset``."""
        if header.producer_id == NO_PRODUCER_ID:
            return
        entry = self._entry_at_epoch(header.producer_id, header.producer_epoch)
        if header.base_sequence >= 0:
            entry.batches.append(BatchMetadata(header.base_sequence, _last_sequence(header),
                                               first_offset, last_offset))
        entry.last_timestamp = max(entry.last_timestamp, header.max_timestamp)
        if header.is_transactional and entry.current_txn_first_offset == NO_OFFSET:
            entry.current_txn_first_offset = first_offset
            self.ongoing[header.producer_id] = first_offset

    def _entry_at_epoch(self, producer_id: int, epoch: int) -> ProducerEntry:
        """The producer's entry, restarted (sequences forgotten) for a newer epoch; its
        open transaction, if any, carries over (markers close it at any newer epoch)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(epoch)
        elif epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        return entry

    # ------------------------------------------------------------------ markers

    def check_marker(self, header: BatchHeader, marker: Marker) -> None:
        """Raise unless the coordinator may end this producer's transaction now."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(f"marker for producer {header.producer_id} at "
                                            f"epoch {header.producer_epoch}, current "
                                            f"{entry.epoch}")
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"marker from coordinator epoch {marker.coordinator_epoch}, last seen "
                f"{entry.coordinator_epoch}")

    def complete(self, header: BatchHeader, marker: Marker, offset: int) -> CompletedTxn:
        """Close the producer's transaction with the marker written at ``offset``."""
        entry = self._entry_at_epoch(header.producer_id, header.producer_epoch)
        entry.coordinator_epoch = max(entry.coordinator_epoch, marker.coordinator_epoch)
        entry.last_timestamp = max(entry.last_timestamp, header.max_timestamp)
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = NO_OFFSET
        self.ongoing.pop(header.producer_id, None)
        return CompletedTxn(header.producer_id, offset if first == NO_OFFSET else first, offset,
                            aborted=not marker.commit)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    # ------------------------------------------------------------------ expiry

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` (never one with an open
        transaction); returns how many went."""
        expired = [pid for pid, entry in self.producers.items()
                   if is_expired(entry, now_ms, expiration_ms)]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # ------------------------------------------------------------------ replay and cuts

    def load_batch(self, header: BatchHeader, marker: Marker | None = None) -> CompletedTxn | None:
        """Replay a batch read from the log (its header carries its final offsets); a
        control batch needs its ``marker``. Returns the transaction a marker closed."""
        if header.magic < 2:
            return None
        if header.is_control:
            if marker is None or header.producer_id == NO_PRODUCER_ID:
                return None
            return self.complete(header, marker, header.base_offset)
        self.update(header, header.base_offset, header.last_offset)
        return None

    # ------------------------------------------------------------------ snapshots

    def snapshot_entries(self) -> list[SnapshotEntry]:
        return [SnapshotEntry(producer_id, entry.epoch,
                              tuple(SnapshotBatch(b.first_sequence, b.last_sequence,
                                                  b.first_offset, b.last_offset)
                                    for b in entry.batches),
                              entry.last_timestamp, entry.coordinator_epoch,
                              entry.current_txn_first_offset)
                for producer_id, entry in self.producers.items()]

    @classmethod
    def from_snapshot(cls, entries: Iterable[SnapshotEntry]) -> ProducerStateManager:
        state = cls()
        for item in entries:
            entry = ProducerEntry(item.epoch, coordinator_epoch=item.coordinator_epoch,
                                  current_txn_first_offset=item.current_txn_first_offset,
                                  last_timestamp=item.timestamp)
            entry.batches.extend(BatchMetadata(b.first_sequence, b.last_sequence,
                                               b.first_offset, b.last_offset)
                                 for b in item.batches)
            state.producers[item.producer_id] = entry
            if item.current_txn_first_offset != NO_OFFSET:
                state.ongoing[item.producer_id] = item.current_txn_first_offset
        return state
