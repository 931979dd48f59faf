"""The consumer: fetcher, group membership and partition assignors."""

from kafkalite.consumer.assignors import (
    Assignment,
    Assignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
)
from kafkalite.consumer.consumer import Consumer, NoOffsetForPartitionError
from kafkalite.consumer.group import CommitFailedError
from kafkalite.consumer.list_offsets import OffsetAndTimestamp
from kafkalite.consumer.listener import ConsumerRebalanceListener
from kafkalite.consumer.subscription_state import IllegalStateError

__all__ = [
    "Assignment",
    "Assignor",
    "CommitFailedError",
    "Consumer",
    "ConsumerRebalanceListener",
    "IllegalStateError",
    "NoOffsetForPartitionError",
    "OffsetAndTimestamp",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
]
