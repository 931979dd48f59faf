"""Where a leader writes its ISR changes: the partition state node, as 2.x brokers do.

Kafka 2.x leaders (inter.broker.protocol.version < 2.7) write
``/brokers/topics/<t>/partitions/<p>/state`` themselves, conditionally on the zkVersion
they last saw, then leave an ``/isr_change_notification/isr_change_<seq>`` node so the
controller re-reads the state and sends UpdateMetadata. kafkalite does the same rather
than AlterPartition (56): the state node already carries the version check the controller
uses, and brokers already hold a coordination session. A write that loses the version
check raises :class:`BadVersionError`; the leader re-reads and decides again
(:meth:`Partition.alter_isr`), it never forces a write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kafkalite_server.cluster import zk_layout as zk
from kafkalite_server.cluster.coordination import Coordination, CoordinationError

TopicPartition = tuple[str, int]


class PartitionStateStore(Protocol):
    def read(self, key: TopicPartition) -> tuple[zk.LeaderIsr, int]:
        """The state node's document and version."""

    def write(self, key: TopicPartition, state: zk.LeaderIsr, version: int) -> int:
        """Writes if the node is still at ``version``; returns the new version."""


class ZkPartitionStateStore:
    def __init__(self, store: Callable[[], Coordination]) -> None:
        """``store()`` is the broker's current session (it changes after an expiry)."""
        self._store = store

    def read(self, key: TopicPartition) -> tuple[zk.LeaderIsr, int]:
        path = zk.partition_state_path(*key)
        data, stat = self._store().get(path)
        return zk.LeaderIsr.decode(path, data), stat.version

    def write(self, key: TopicPartition, state: zk.LeaderIsr, version: int) -> int:
        store = self._store()
        stat = store.set(zk.partition_state_path(*key), state.encode(), version)
        store.create(zk.ISR_CHANGE_PREFIX, zk.encode_isr_change([key]), sequential=True,
                     makepath=True)
        return stat.version


class NoPartitionStateStore:
    """A standalone broker's partitions have one replica: their ISR never changes."""

    def read(self, key: TopicPartition) -> tuple[zk.LeaderIsr, int]:
        raise CoordinationError(f"{key[0]}-{key[1]}: a standalone broker keeps no "
                                "partition state node")

    def write(self, key: TopicPartition, state: zk.LeaderIsr, version: int) -> int:
        raise CoordinationError(f"{key[0]}-{key[1]}: a standalone broker's ISR is its "
                                "leader alone")
