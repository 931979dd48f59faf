"""The names Kafka's wire gives group and transaction states.

DescribeGroups, ListGroups, DescribeTransactions and ListTransactions carry states as
strings; the broker reports them and the admin client reads them, so both take the names
from here and cannot drift apart.
"""

from __future__ import annotations

import enum


class GroupState(enum.StrEnum):
    """A group's state as DescribeGroups / ListGroups v4+ name it (classic groups take the
    first five; consumer groups also Assigning and Reconciling)."""

    UNKNOWN = "Unknown"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"


class TransactionState(enum.StrEnum):
    """A transaction's state as the coordinator names it on the wire."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    UNKNOWN = "Unknown"

    @classmethod
    def _missing_(cls, value: object) -> TransactionState:
        return cls.UNKNOWN  # a state a newer broker reports
