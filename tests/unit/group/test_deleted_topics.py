"""Offsets of deleted topics (Kafka's handleDeletedPartitions): tombstoned, never kept."""

from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.group import GroupCoordinator
from kafkalite_server.group import error_codes as codes
from kafkalite_server.group.offsets import OffsetCommitEntry, TopicPartition

from .fakes import GROUP, FakeScheduler, MemoryStore, stable_group

GONE_0 = TopicPartition("gone", 0)
GONE_1 = TopicPartition("gone", 1)
KEPT = TopicPartition("kept", 0)


def commit_simple(coordinator: GroupCoordinator, *partitions: TopicPartition,
                  group: str = GROUP) -> None:
    results = coordinator.commit_offsets(
        group, -1, "", {tp: OffsetCommitEntry(7) for tp in partitions})
    assert set(results.values()) == {codes.NONE}


def test_only_the_deleted_topics_offsets_are_tombstoned(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    commit_simple(coordinator, GONE_0, GONE_1, KEPT)
    members, generation = stable_group(coordinator, scheduler, 1)

    removed = coordinator.remove_offsets_of_deleted_topics({"gone"}.__contains__)

    assert removed == 2
    assert store.deleted_offsets == [(coordinator.partition_for(GROUP), GROUP,
                                      [GONE_0, GONE_1])]
    assert set(coordinator.fetch_offsets(GROUP, None).offsets) == {KEPT}
    assert coordinator.heartbeat(GROUP, generation, members[0]) == codes.NONE


def test_an_empty_group_left_without_offsets_is_deleted_with_them(
    coordinator: GroupCoordinator, store: MemoryStore
) -> None:
    commit_simple(coordinator, GONE_0)
    coordinator.remove_offsets_of_deleted_topics({"gone"}.__contains__)
    assert store.deleted == [(coordinator.partition_for(GROUP), GROUP, [GONE_0])]
    assert coordinator.group(GROUP) is None


def test_only_groups_of_the_given_partition_are_looked_at(
    coordinator: GroupCoordinator, store: MemoryStore
) -> None:
    other_group = next(f"g{n}" for n in range(100)
                       if coordinator.partition_for(f"g{n}") != coordinator.partition_for(GROUP))
    commit_simple(coordinator, GONE_0)
    commit_simple(coordinator, GONE_0, group=other_group)

    coordinator.remove_offsets_of_deleted_topics({"gone"}.__contains__,
                                                 coordinator.partition_for(other_group))

    assert [group for _, group, _ in store.deleted] == [other_group]
    assert set(coordinator.fetch_offsets(GROUP, None).offsets) == {GONE_0}


def test_a_failed_write_keeps_the_offsets(
    coordinator: GroupCoordinator, store: MemoryStore
) -> None:
    commit_simple(coordinator, GONE_0, KEPT)
    store.fail_with = KafkaStorageError("disk full")
    assert coordinator.remove_offsets_of_deleted_topics({"gone"}.__contains__) == 0
    assert set(coordinator.fetch_offsets(GROUP, None).offsets) == {GONE_0, KEPT}
