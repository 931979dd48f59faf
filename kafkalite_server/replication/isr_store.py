"""Where a leader writes its ISR changes, in replication's own terms.

A leader proposes an ISR (:class:`IsrState`) conditionally on the version of the partition
state it last saw; the store answers later (the write is a network round trip, made off
the event loop), and meanwhile the change is *pending* (:mod:`partition`, as Kafka's
AlterPartition design, KIP-497). A write that loses the version check raises
:class:`StaleIsrVersionError`: the leader re-reads and decides again, it never forces a
write.

The store is the partition state node (``cluster/partition_states.py`` translates to
Kafka's ZooKeeper layout, as 2.x brokers write it themselves and leave an ISR change
notification for the controller), over whichever coordination store the broker runs on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kafkalite.errors import KafkaError
from kafkalite_server.topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class IsrState:
    """A partition's leadership and ISR as written by its leader or the controller."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int


class StaleIsrVersionError(KafkaError):
    """The partition state changed since the version the write was conditional on."""


class IsrStore(Protocol):
    async def read(self, key: TopicPartition) -> tuple[IsrState, int]:
        """The partition's state and its version."""

    async def write(self, key: TopicPartition, state: IsrState, version: int) -> int:
        """Writes if the state is still at ``version`` (StaleIsrVersionError otherwise);
        returns the new version."""

