"""The transactional producer's state machine (Java's TransactionManager), sans-IO.

A transactional producer has a ``transactional_id``; ``init_transactions()`` gets its
producer id and epoch from the transaction coordinator (fencing any older producer with
the same id), then each transaction is ``begin_transaction()``, sends (each new partition
is added with AddPartitionsToTxn before its first batch), optionally
``send_offsets_to_transaction()``, and ``commit_transaction()`` or
``abort_transaction()``. :mod:`kafkalite.producer.transaction_driver` sends the requests;
this module decides, with every transition in :data:`TRANSITIONS`.

Errors are typed as in the Java client:

- :class:`ProducerFencedTransactionError` (fatal): a newer producer with the same id
  exists, or the coordinator fenced this one (e.g. after its transaction timed out). Close
  the producer.
- :class:`FatalTransactionError`: anything else the producer cannot recover from
  (INVALID_TXN_STATE, an invalid transaction timeout, authorization).
- :class:`AbortableTransactionError`: this transaction failed (a batch was not written,
  INVALID_PRODUCER_EPOCH, ...); call ``abort_transaction()`` and start again.
- :class:`TransactionTimeoutError`: the call did not finish within ``max_block_ms``; it
  may be called again.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol.errors import (
    BrokerResponseError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    NotCoordinatorError,
    OperationNotAttemptedError,
    ProducerFencedError,
    RequestTimedOutError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkalite.structs import TopicPartition


class TransactionError(KafkaError):
    """Base of the transactional producer's errors."""


class FatalTransactionError(TransactionError):
    """The producer cannot continue: close it."""


class ProducerFencedTransactionError(FatalTransactionError, ProducerFencedError):
    """Another producer with the same transactional id took over (PRODUCER_FENCED)."""


class AbortableTransactionError(TransactionError):
    """The current transaction failed: ``abort_transaction()``, then begin a new one."""


class TransactionTimeoutError(TransactionError, KafkaTimeoutError):
    """The call did not complete within ``max_block_ms``; calling it again resumes it."""


class State(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable error"
    FATAL_ERROR = "fatal error"


class Event(enum.Enum):
    INIT = "init_transactions()"
    INITIALIZED = "producer id received"
    BEGIN = "begin_transaction()"
    COMMIT = "commit_transaction()"
    ABORT = "abort_transaction()"
    COMPLETED = "EndTxn answered"
    REINIT = "epoch bump after abort"
    ABORTABLE = "abortable error"
    FATAL = "fatal error"


S = State
TRANSITIONS: dict[tuple[State, Event], State] = {
    (S.UNINITIALIZED, Event.INIT): S.INITIALIZING,
    (S.INITIALIZING, Event.INIT): S.INITIALIZING,  # retried after a timeout
    (S.INITIALIZING, Event.INITIALIZED): S.READY,
    (S.READY, Event.BEGIN): S.IN_TRANSACTION,
    (S.IN_TRANSACTION, Event.COMMIT): S.COMMITTING,
    (S.COMMITTING, Event.COMMIT): S.COMMITTING,  # retried after a timeout
    (S.IN_TRANSACTION, Event.ABORT): S.ABORTING,
    (S.ABORTABLE_ERROR, Event.ABORT): S.ABORTING,
    (S.ABORTING, Event.ABORT): S.ABORTING,  # retried after a timeout
    (S.COMMITTING, Event.COMPLETED): S.READY,
    (S.ABORTING, Event.COMPLETED): S.READY,
    (S.ABORTING, Event.REINIT): S.INITIALIZING,
    (S.IN_TRANSACTION, Event.ABORTABLE): S.ABORTABLE_ERROR,
    (S.COMMITTING, Event.ABORTABLE): S.ABORTABLE_ERROR,
    (S.ABORTABLE_ERROR, Event.ABORTABLE): S.ABORTABLE_ERROR,
    **{(state, Event.FATAL): S.FATAL_ERROR for state in State},
}

RETRIABLE = frozenset({ConcurrentTransactionsError.errno, CoordinatorLoadInProgressError.errno,
                       CoordinatorNotAvailableError.errno, NotCoordinatorError.errno,
                       UnknownTopicOrPartitionError.errno, OperationNotAttemptedError.errno,
                       RequestTimedOutError.errno})
"""Errors a transactional request is simply retried after (a new coordinator lookup for
the coordinator errors)."""
REFIND_COORDINATOR = frozenset({CoordinatorNotAvailableError.errno, NotCoordinatorError.errno})
ABORTABLE = frozenset({InvalidProducerEpochError.errno, UnknownProducerIdError.errno})
FENCED = frozenset({ProducerFencedError.errno, TransactionCoordinatorFencedError.errno})


class TransactionManager:
    """See the module docstring. Thread-safety is the driver's (one call at a time)."""

    def __init__(self, transactional_id: str, timeout_ms: int) -> None:
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.state = State.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self.partitions: set[TopicPartition] = set()
        """Partitions added to the current transaction."""
        self.offsets_added = False
        self.needs_epoch_bump = False
        self.error: TransactionError | None = None

    def apply(self, event: Event) -> None:
        target = TRANSITIONS.get((self.state, event))
        if target is None:
            raise FatalTransactionError(
                f"{event.value} is not allowed while the producer is {self.state.value}") \
                if self.state is State.FATAL_ERROR else KafkaError(
                f"{event.value} is not allowed while the producer is {self.state.value}")
        self.state = target

    def require(self, *states: State, action: str) -> None:
        if self.state is State.FATAL_ERROR and self.error is not None:
            raise self.error
        if self.state is State.ABORTABLE_ERROR and State.ABORTABLE_ERROR not in states:
            raise AbortableTransactionError(
                f"{action}: the transaction failed ({self.error}); abort_transaction() first")
        if self.state not in states:
            raise KafkaError(f"{action} is not allowed while the producer is "
                             f"{self.state.value}")

    # -- requests ---------------------------------------------------------------------------

    def init_body(self) -> dict[str, object]:
        """InitProducerId: a fresh start, or (after a failed transaction) an epoch bump."""
        bump = self.needs_epoch_bump and self.producer_id >= 0
        return {"transactional_id": self.transactional_id,
                "transaction_timeout_ms": self.timeout_ms,
                "producer_id": self.producer_id if bump else -1,
                "producer_epoch": self.producer_epoch if bump else -1}

    def initialized(self, producer_id: int, producer_epoch: int) -> None:
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self.needs_epoch_bump = False
        self.partitions.clear()
        self.offsets_added = False
        self.apply(Event.INITIALIZED)

    def begin(self) -> None:
        self.require(State.READY, action="begin_transaction()")
        self.apply(Event.BEGIN)

    def new_partition(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` must be added before a record is sent to it."""
        self.require(State.IN_TRANSACTION, action="send()")
        return tp not in self.partitions

    def ended(self) -> bool:
        """EndTxn answered; True when the producer must re-initialize (epoch bump) first."""
        self.partitions.clear()
        self.offsets_added = False
        if self.state is State.ABORTING and self.needs_epoch_bump:
            self.apply(Event.REINIT)
            return True
        self.apply(Event.COMPLETED)
        return False

    def has_partitions(self) -> bool:
        return bool(self.partitions) or self.offsets_added

    # -- failures ---------------------------------------------------------------------------

    def batch_failed(self, error: BaseException) -> None:
        """A batch of the transaction was not (or maybe not) written."""
        if getattr(error, "errno", None) in FENCED:
            self.fail(error)
            return
        self.needs_epoch_bump = True
        if self.state in (State.IN_TRANSACTION, State.COMMITTING, State.ABORTABLE_ERROR):
            self.error = AbortableTransactionError(f"a batch of the transaction failed: {error}")
            self.apply(Event.ABORTABLE)

    def fail(self, error: BaseException) -> TransactionError:
        """Classify a request's error, move to the matching state and return it to raise."""
        errno = getattr(error, "errno", None)
        if isinstance(error, TransactionError):
            typed = error
        elif errno in FENCED:
            typed = ProducerFencedTransactionError(str(error))
        elif errno in ABORTABLE and self.state in (State.IN_TRANSACTION, State.COMMITTING):
            self.needs_epoch_bump = True
            typed = AbortableTransactionError(str(error))
        else:
            typed = FatalTransactionError(str(error))
        typed.__cause__ = error if error is not typed else None
        self.error = typed
        self.apply(Event.FATAL if isinstance(typed, FatalTransactionError) else Event.ABORTABLE)
        return typed


def classify(errno: int) -> str:
    """'ok', 'retry', 'refind' (retry after a coordinator lookup) or 'fail'."""
    if errno == 0:
        return "ok"
    if errno in REFIND_COORDINATOR:
        return "refind"
    if errno in RETRIABLE:
        return "retry"
    return "fail"


def error_of(errno: int, context: str) -> BrokerResponseError:
    return error_for_code(errno)(context)


# -- the error of a transaction API's answer (the first one, for the per-partition ones) ----


def top_error(response: dict[str, Any]) -> int:
    """The error of an answer with one top-level error code (InitProducerId, EndTxn ...)."""
    return int(response["error_code"])


def add_partitions_error(response: dict[str, Any]) -> int:
    """The first partition error of an AddPartitionsToTxn answer (v3 and below)."""
    return _first_error(p["partition_error_code"]
                        for t in response["results_by_topic_v3_and_below"]
                        for p in t["results_by_partition"])


def txn_offset_commit_error(response: dict[str, Any]) -> int:
    """The first partition error of a TxnOffsetCommit answer."""
    return _first_error(p["error_code"] for t in response["topics"] for p in t["partitions"])


def _first_error(codes: Iterable[int]) -> int:
    return next((code for code in codes if code), 0)
