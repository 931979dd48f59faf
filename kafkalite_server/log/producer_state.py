"""Idempotent producer state: per producer id, its epoch and its last five batches.

A retried batch (same producer, epoch and sequence range as one of the last five) is
answered with the offsets it got the first time instead of being appended again; a
sequence gap or an older epoch is rejected. This is what makes ``enable.idempotence``
(on by default in kafka-python 3 and the Java client) exactly-once per partition.

State is not snapshotted to disk: :meth:`Log.open` rebuilds it from the batch headers of
the last segments (see :data:`SEGMENTS_SCANNED_ON_LOAD`), which covers a producer's retries
after a restart; older producers come back as unknown and are accepted at any sequence.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafkalite.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from kafkalite.records.batch_header import BatchHeader

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
BATCHES_KEPT = 5
SEGMENTS_SCANNED_ON_LOAD = 2
_INT32_MAX = 2**31 - 1


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

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


def _next_sequence(sequence: int) -> int:
    """Sequences wrap from Int32.MAX to 0."""
    return 0 if sequence == _INT32_MAX else sequence + 1


def _last_sequence(header: BatchHeader) -> int:
    last = header.base_sequence + header.last_offset - header.base_offset
    return last - _INT32_MAX - 1 if last > _INT32_MAX else last


class ProducerStateManager:
    """Producer id -> :class:`ProducerEntry` for one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate an incoming batch's epoch and sequence before it gets offsets.

        Returns the original batch when this one is a retry of it (a duplicate), ``None``
        when it is new and in order; raises InvalidProducerEpochError or
        OutOfOrderSequenceNumberError otherwise.
        """
        if header.producer_id == NO_PRODUCER_ID or header.base_sequence < 0:
            return None
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(f"producer {header.producer_id} epoch "
                                            f"{header.producer_epoch} is older than "
                                            f"{entry.epoch}")
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
        """Remember a batch that was appended at ``first_offset..last_offset``."""
        if header.producer_id == NO_PRODUCER_ID or header.base_sequence < 0:
            return
        entry = self.producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = self.producers[header.producer_id] = ProducerEntry(header.producer_epoch)
        entry.batches.append(BatchMetadata(header.base_sequence, _last_sequence(header),
                                           first_offset, last_offset))

    def load_batch(self, header: BatchHeader) -> None:
        """Replay a batch read from the log (its header carries its final offsets)."""
        if header.magic >= 2:
            self.update(header, header.base_offset, header.last_offset)

    def truncate_from(self, offset: int) -> None:
        """Forget batches at or above ``offset`` (the log was cut there)."""
        for producer_id in list(self.producers):
            entry = self.producers[producer_id]
            while entry.batches and entry.batches[-1].last_offset >= offset:
                entry.batches.pop()
            if not entry.batches:
                del self.producers[producer_id]
