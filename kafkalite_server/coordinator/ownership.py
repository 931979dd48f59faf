"""Which partitions of a coordinator's internal topic this broker coordinates.

A key (a group id, a transactional id) belongs to partition
``abs(hashCode(key)) % partition count``; the partition's leader is the key's coordinator.
The runtime moves a partition through loading (the leader's log being replayed: requests
answer COORDINATOR_LOAD_IN_PROGRESS) to owned, and drops it when leadership moves away
(NOT_COORDINATOR). The coordinator epoch of a partition is the leader epoch it was loaded
at, or a newer one of the same leadership; transaction markers carry it. Sans-IO: the
state machines read it, only the runtime changes it.
"""

from __future__ import annotations

from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    NotCoordinatorError,
)
from kafkalite_server.coordinator.hashing import partition_for


class Ownership:
    def __init__(self, partition_count: int) -> None:
        if partition_count <= 0:
            raise ValueError(f"an internal topic needs partitions, got {partition_count}")
        self.partition_count = partition_count
        self._loading: dict[int, int] = {}
        self._owned: dict[int, int] = {}
        """Partition -> coordinator epoch."""

    def partition_for(self, key: str) -> int:
        """The partition that stores ``key`` (Kafka's ``Utils.abs(key.hashCode) % count``)."""
        return partition_for(key, self.partition_count)

    def adopt_partition_count(self, count: int) -> None:
        """Place keys by the topic's real partition count, as Kafka does when the topic
        exists with another count than configured. Only while nothing is loaded or owned:
        moving keys between partitions would lose them."""
        if count == self.partition_count:
            return
        if self._loading or self._owned:
            raise RuntimeError("the partition count cannot change while partitions are owned")
        self.partition_count = count

    # -- changed by the runtime ------------------------------------------------------------

    def begin_loading(self, partition: int, epoch: int) -> None:
        self._owned.pop(partition, None)
        self._loading[partition] = epoch

    def complete_loading(self, partition: int) -> bool:
        """The partition is served from now on; False if it stopped loading meanwhile."""
        epoch = self._loading.pop(partition, None)
        if epoch is None:
            return False
        self._owned[partition] = epoch
        return True

    def raise_epoch(self, partition: int, epoch: int) -> None:
        """A newer leader epoch of the same leadership (an ISR change): nothing to reload."""
        for held in (self._loading, self._owned):
            if partition in held:
                held[partition] = max(held[partition], epoch)

    def unload(self, partition: int) -> None:
        self._loading.pop(partition, None)
        self._owned.pop(partition, None)

    # -- read by everyone ------------------------------------------------------------------

    def error_for(self, key: str) -> int:
        """0 when this broker serves ``key``, else the error to answer."""
        partition = self.partition_for(key)
        if partition in self._owned:
            return 0
        if partition in self._loading:
            return CoordinatorLoadInProgressError.errno
        return NotCoordinatorError.errno

    def owns(self, key: str) -> bool:
        return self.partition_for(key) in self._owned

    def is_owned(self, partition: int) -> bool:
        return partition in self._owned

    def epoch(self, partition: int) -> int:
        """The coordinator epoch of a loading or owned partition, else -1."""
        return self._owned.get(partition, self._loading.get(partition, -1))

    @property
    def owned(self) -> frozenset[int]:
        return frozenset(self._owned)

    @property
    def loading(self) -> frozenset[int]:
        return frozenset(self._loading)

    @property
    def partitions(self) -> frozenset[int]:
        """Loading or owned."""
        return frozenset(self._owned) | frozenset(self._loading)
