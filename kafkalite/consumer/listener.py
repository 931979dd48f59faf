"""The rebalance callback interface, as in the Java client and kafka-python."""

from __future__ import annotations

from abc import ABC, abstractmethod

from kafkalite.structs import TopicPartition


class ConsumerRebalanceListener(ABC):
    """Hooks around a group rebalance; both run inside ``poll()`` on the application's thread.

    ``on_partitions_revoked`` runs before the consumer rejoins, after auto commit (when on)
    committed the consumed positions: the place to commit manually or flush state.
    ``on_partitions_assigned`` runs once the new assignment is known, before any fetch.
    """

    @abstractmethod
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    @abstractmethod
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...
