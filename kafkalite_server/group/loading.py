"""The group coordinator as the coordinator runtime sees it
(:class:`~kafkalite_server.coordinator.state_machine.CoordinatorStateMachine`): each
``__consumer_offsets`` partition holds groups (the :class:`GroupCoordinator`) and
transactional offsets waiting for their markers (:class:`TransactionalOffsets`), loaded,
unloaded and cleaned of deleted topics together."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafkalite.records import Record
from kafkalite_server.group.coordinator import GroupCoordinator
from kafkalite_server.group.offsets_records import OffsetsReplay
from kafkalite_server.group.txn_offsets import TransactionalOffsets


class OffsetsStateMachine:
    def __init__(self, coordinator: GroupCoordinator, txn_offsets: TransactionalOffsets) -> None:
        self._coordinator = coordinator
        self._txn_offsets = txn_offsets

    def loader(self, partition: int) -> OffsetsLoader:
        return OffsetsLoader(self._coordinator, self._txn_offsets, partition)

    def unload(self, partition: int) -> None:
        self._coordinator.unload_partition(partition)
        self._txn_offsets.unload(partition)

    def topics_deleted(self, deleted: Callable[[str], bool], partition: int | None) -> None:
        """Kafka's handleDeletedPartitions: the offsets of deleted topics are tombstoned,
        and pending transactional ones forgotten (their commit must not bring them back)."""
        self._txn_offsets.forget_deleted_topics(deleted, partition)
        self._coordinator.remove_offsets_of_deleted_topics(deleted, partition)


class OffsetsLoader:
    """Replays one offsets partition: the last value per key wins (compaction's view)."""

    def __init__(self, coordinator: GroupCoordinator, txn_offsets: TransactionalOffsets,
                 partition: int) -> None:
        self._coordinator = coordinator
        self._txn_offsets = txn_offsets
        self._partition = partition
        self._replay = OffsetsReplay()

    def load(self, records: Sequence[Record]) -> None:
        self._replay.feed(records)

    def complete(self) -> None:
        self._coordinator.install(self._partition, self._replay.loaded_groups())
        self._txn_offsets.loaded(self._partition, self._replay.transactional)
