"""aiokafka's ``ConsumerRebalanceListener``: told of partitions revoked and assigned.

Either method may be a plain function or a coroutine; the consumer awaits a coroutine
before it goes on (a revoke before the join, an assignment before the first fetch), so a
listener can commit or seek with the consumer's own coroutines.
"""

from __future__ import annotations

import abc
from typing import Any

from kafkalite.structs import TopicPartition

__all__ = ["ConsumerRebalanceListener"]


class ConsumerRebalanceListener(abc.ABC):
    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """Before a rebalance: the partitions this member gives up."""

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """After a rebalance: the partitions this member now reads."""
