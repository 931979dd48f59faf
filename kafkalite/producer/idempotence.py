"""The idempotent producer's identity (producer id, epoch) and per-partition sequences.

The broker accepts a partition's batches from one producer only in sequence order. When a
batch fails after it was stamped with a sequence (a non-retriable error such as
UNKNOWN_SERVER_ERROR, retries or the delivery timeout used up, OUT_OF_ORDER_SEQUENCE_NUMBER,
UNKNOWN_PRODUCER_ID), the producer cannot know whether the broker wrote it, so the next
sequence is unknown: continuing would fail every later batch with
OUT_OF_ORDER_SEQUENCE_NUMBER. Like the Java client (KIP-360), the producer then bumps its
epoch and starts its sequences over at 0: it sends InitProducerId v3+ naming its current id
and epoch and gets the same id with epoch + 1 (a new id from a broker that does not bump,
such as Kafka for non-transactional producers, or when the epoch is exhausted). A broker
older than InitProducerId v3, or one that answers the bump as fenced, is asked for a fresh
id instead. Only the failed batch fails; later batches go out under the new identity.

Each partition remembers the identity its sequences belong to: a partition's next batch
under another identity starts at sequence 0 (its last batch under the old one has been
answered: the sender keeps one batch in flight per partition). Batches already stamped
keep their identity and sequence when retried, so the broker can still deduplicate them.

Pure state: the sender sends the requests and reports back. All transitions are in
:data:`TRANSITIONS`.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from kafkalite.protocol.primitives import INT32_MAX
from kafkalite.structs import TopicPartition

MAX_SEQUENCE = INT32_MAX
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_TRANSACTION_TIMEOUT_MS = INT32_MAX
FIRST_BUMP_VERSION = 3
"""InitProducerId carries the producer's current id and epoch from v3 on."""


class Identity(NamedTuple):
    producer_id: int
    epoch: int


NO_IDENTITY = Identity(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)


class State(enum.Enum):
    NO_ID = "no producer id"
    INITIALIZING = "asking for a producer id"
    BUMP_REQUIRED = "sequence state unknown: epoch bump needed"
    BUMPING = "asking for an epoch bump"
    READY = "ready"
    FATAL = "failed"


class Event(enum.Enum):
    REQUEST_SENT = "InitProducerId sent"
    IDENTITY_RECEIVED = "InitProducerId answered with an identity"
    RETRIABLE_ERROR = "InitProducerId failed, retriable"
    BUMP_REFUSED = "the broker cannot or will not bump this identity"
    FATAL_ERROR = "InitProducerId failed for good"
    SEQUENCE_UNKNOWN = "a stamped batch failed"


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.NO_ID, Event.REQUEST_SENT): State.INITIALIZING,
    (State.NO_ID, Event.SEQUENCE_UNKNOWN): State.NO_ID,
    (State.INITIALIZING, Event.IDENTITY_RECEIVED): State.READY,
    (State.INITIALIZING, Event.RETRIABLE_ERROR): State.NO_ID,
    (State.INITIALIZING, Event.FATAL_ERROR): State.FATAL,
    (State.INITIALIZING, Event.SEQUENCE_UNKNOWN): State.INITIALIZING,
    (State.READY, Event.SEQUENCE_UNKNOWN): State.BUMP_REQUIRED,
    (State.BUMP_REQUIRED, Event.REQUEST_SENT): State.BUMPING,
    (State.BUMP_REQUIRED, Event.BUMP_REFUSED): State.NO_ID,
    (State.BUMP_REQUIRED, Event.SEQUENCE_UNKNOWN): State.BUMP_REQUIRED,
    (State.BUMPING, Event.IDENTITY_RECEIVED): State.READY,
    (State.BUMPING, Event.RETRIABLE_ERROR): State.BUMP_REQUIRED,
    (State.BUMPING, Event.BUMP_REFUSED): State.NO_ID,
    (State.BUMPING, Event.FATAL_ERROR): State.FATAL,
    (State.BUMPING, Event.SEQUENCE_UNKNOWN): State.BUMPING,
    (State.FATAL, Event.SEQUENCE_UNKNOWN): State.FATAL,
}


class IllegalTransitionError(RuntimeError):
    """An event that cannot happen in the current state (a bug in the caller)."""


class _PartitionSequence:
    __slots__ = ("identity", "next")

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.next = 0


class IdempotenceState:
    """See the module docstring."""

    def __init__(self) -> None:
        self.state = State.NO_ID
        self.identity = NO_IDENTITY
        self.bumps = 0
        """Epoch bumps (or id replacements after a failure) so far: a metric."""
        self._partitions: dict[TopicPartition, _PartitionSequence] = {}

    def _apply(self, event: Event) -> None:
        target = TRANSITIONS.get((self.state, event))
        if target is None:
            raise IllegalTransitionError(f"{event.value} while {self.state.value}")
        self.state = target

    @property
    def ready(self) -> bool:
        return self.state is State.READY

    @property
    def needs_request(self) -> bool:
        return self.state in (State.NO_ID, State.BUMP_REQUIRED)

    def request_body(self, version: int) -> dict[str, object]:
        """The InitProducerId body to send now (a bump needs ``version`` >= 3; below that the
        bump is refused here and a fresh id is asked for), and the request marked sent."""
        if self.state is State.BUMP_REQUIRED and version < FIRST_BUMP_VERSION:
            self._apply(Event.BUMP_REFUSED)
        current = self.identity if self.state is State.BUMP_REQUIRED else NO_IDENTITY
        self._apply(Event.REQUEST_SENT)
        return {"transactional_id": None, "transaction_timeout_ms": NO_TRANSACTION_TIMEOUT_MS,
                "producer_id": current.producer_id, "producer_epoch": current.epoch}

    def identity_received(self, producer_id: int, epoch: int) -> None:
        if self.state is State.BUMPING or self.identity != NO_IDENTITY:
            self.bumps += 1
        self._apply(Event.IDENTITY_RECEIVED)
        self.identity = Identity(producer_id, epoch)

    def request_failed(self, *, retriable: bool, fenced: bool = False) -> None:
        """InitProducerId failed: retry, fall back to a fresh id (a refused bump), or stop."""
        if retriable:
            self._apply(Event.RETRIABLE_ERROR)
        elif fenced and self.state is State.BUMPING:
            self._apply(Event.BUMP_REFUSED)
        else:
            self._apply(Event.FATAL_ERROR)

    def stamp(self, tp: TopicPartition, record_count: int) -> tuple[int, int, int]:
        """(producer id, epoch, base sequence) for ``tp``'s next batch of ``record_count``."""
        partition = self._partitions.get(tp)
        if partition is None or partition.identity != self.identity:
            partition = self._partitions[tp] = _PartitionSequence(self.identity)
        base = partition.next
        partition.next = (base + record_count) & MAX_SEQUENCE
        return self.identity.producer_id, self.identity.epoch, base

    def batch_failed(self, producer_id: int, epoch: int) -> None:
        """A batch stamped with (``producer_id``, ``epoch``) failed: its partition's sequence
        is unknown. Only the current identity needs a bump; an older one is already gone."""
        if producer_id == NO_PRODUCER_ID or Identity(producer_id, epoch) != self.identity:
            return
        self._apply(Event.SEQUENCE_UNKNOWN)
