"""Transaction states and every transition between them, in one table.

A transactional id is in one of Kafka's eight states (the byte is what
``__transaction_state`` stores, the name what DescribeTransactions and ListTransactions
report). :data:`TRANSITIONS` maps (state, event) to the next state, or to the error a
request meets in that state; a pair missing from the table is INVALID_TXN_STATE.

- INIT: InitProducerId. Between transactions it bumps the epoch (state Empty); during one
  it fences the old producer (PrepareEpochFence, then the abort below) and answers
  CONCURRENT_TRANSACTIONS, so the new producer retries once the abort is complete.
- ADD: AddPartitionsToTxn / AddOffsetsToTxn start or extend a transaction.
- COMMIT / ABORT: EndTxn. A retried EndTxn whose outcome is already complete succeeds
  without a change (RETRY_OK).
- FENCE_ABORT: the coordinator aborts on its own (a fenced or timed-out transaction).
- MARKERS_WRITTEN: every partition has its marker; the transaction is complete.
- EXPIRE: transactional.id.expiration.ms passed without a transaction.
"""

from __future__ import annotations

from enum import Enum

from kafkalite.protocol.errors import ConcurrentTransactionsError, InvalidTxnStateError
from kafkalite.protocol.states import TransactionState


class TxnState(Enum):
    """The byte ``__transaction_state`` stores, and the wire name."""

    EMPTY = (0, TransactionState.EMPTY)
    ONGOING = (1, TransactionState.ONGOING)
    PREPARE_COMMIT = (2, TransactionState.PREPARE_COMMIT)
    PREPARE_ABORT = (3, TransactionState.PREPARE_ABORT)
    COMPLETE_COMMIT = (4, TransactionState.COMPLETE_COMMIT)
    COMPLETE_ABORT = (5, TransactionState.COMPLETE_ABORT)
    DEAD = (6, TransactionState.DEAD)
    PREPARE_EPOCH_FENCE = (7, TransactionState.PREPARE_EPOCH_FENCE)

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        for state in cls:
            if state.id == state_id:
                return state
        raise ValueError(f"unknown transaction state {state_id}")

    @classmethod
    def from_display(cls, name: str) -> TxnState | None:
        return next((state for state in cls if state.display == name), None)


class Event(Enum):
    INIT = "init"
    ADD = "add"
    COMMIT = "commit"
    ABORT = "abort"
    FENCE_ABORT = "fence-abort"
    MARKERS_WRITTEN = "markers-written"
    EXPIRE = "expire"


RETRY_OK = "retry-ok"
"""The request repeats a completed step: succeed, change nothing."""
FENCE = "fence"
"""INIT during a transaction: fence the producer and abort (answer CONCURRENT_TRANSACTIONS)."""

S = TxnState
CONCURRENT = ConcurrentTransactionsError.errno
INVALID = InvalidTxnStateError.errno

Outcome = TxnState | str | int
"""A next state, RETRY_OK / FENCE, or an error code."""

TRANSITIONS: dict[tuple[TxnState, Event], Outcome] = {
    # InitProducerId
    (S.EMPTY, Event.INIT): S.EMPTY,
    (S.COMPLETE_COMMIT, Event.INIT): S.EMPTY,
    (S.COMPLETE_ABORT, Event.INIT): S.EMPTY,
    (S.ONGOING, Event.INIT): FENCE,
    (S.PREPARE_COMMIT, Event.INIT): CONCURRENT,
    (S.PREPARE_ABORT, Event.INIT): CONCURRENT,
    (S.PREPARE_EPOCH_FENCE, Event.INIT): CONCURRENT,
    (S.DEAD, Event.INIT): CONCURRENT,
    # AddPartitionsToTxn, AddOffsetsToTxn
    (S.EMPTY, Event.ADD): S.ONGOING,
    (S.ONGOING, Event.ADD): S.ONGOING,
    (S.COMPLETE_COMMIT, Event.ADD): S.ONGOING,
    (S.COMPLETE_ABORT, Event.ADD): S.ONGOING,
    (S.PREPARE_COMMIT, Event.ADD): CONCURRENT,
    (S.PREPARE_ABORT, Event.ADD): CONCURRENT,
    (S.PREPARE_EPOCH_FENCE, Event.ADD): CONCURRENT,
    # EndTxn
    (S.ONGOING, Event.COMMIT): S.PREPARE_COMMIT,
    (S.PREPARE_COMMIT, Event.COMMIT): CONCURRENT,
    (S.COMPLETE_COMMIT, Event.COMMIT): RETRY_OK,
    (S.PREPARE_EPOCH_FENCE, Event.COMMIT): CONCURRENT,
    (S.ONGOING, Event.ABORT): S.PREPARE_ABORT,
    (S.PREPARE_ABORT, Event.ABORT): CONCURRENT,
    (S.COMPLETE_ABORT, Event.ABORT): RETRY_OK,
    (S.PREPARE_EPOCH_FENCE, Event.ABORT): CONCURRENT,
    # the coordinator's own aborts
    (S.ONGOING, Event.FENCE_ABORT): S.PREPARE_EPOCH_FENCE,
    (S.PREPARE_EPOCH_FENCE, Event.FENCE_ABORT): S.PREPARE_ABORT,
    # markers done
    (S.PREPARE_COMMIT, Event.MARKERS_WRITTEN): S.COMPLETE_COMMIT,
    (S.PREPARE_ABORT, Event.MARKERS_WRITTEN): S.COMPLETE_ABORT,
    # expiration of idle transactional ids
    (S.EMPTY, Event.EXPIRE): S.DEAD,
    (S.COMPLETE_COMMIT, Event.EXPIRE): S.DEAD,
    (S.COMPLETE_ABORT, Event.EXPIRE): S.DEAD,
}


def transition(state: TxnState, event: Event) -> Outcome:
    return TRANSITIONS.get((state, event), INVALID)
