"""The consumer: fetcher, group membership and partition assignors."""

from kafkalite.consumer.assignors import (
    Assignment,
    Assignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
)
from kafkalite.consumer.commits import CommitFailedError
from kafkalite.consumer.consumer import Consumer, KafkaConsumer
from kafkalite.consumer.list_offsets import OffsetAndTimestamp
from kafkalite.consumer.listener import AsyncConsumerRebalanceListener, ConsumerRebalanceListener
from kafkalite.errors import IllegalStateError, NoOffsetForPartitionError

__all__ = [
    "Assignment",
    "Assignor",
    "AsyncConsumerRebalanceListener",
    "CommitFailedError",
    "Consumer",
    "ConsumerRebalanceListener",
    "IllegalStateError",
    "KafkaConsumer",
    "NoOffsetForPartitionError",
    "OffsetAndTimestamp",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
]
