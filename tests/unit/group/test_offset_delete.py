"""OffsetDelete (KIP-496): which committed offsets may be forgotten, and what is persisted."""

from kafkalite.protocol.consumer_protocol import ConsumerProtocolSubscription
from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.group import GroupCoordinator, GroupState
from kafkalite_server.group import error_codes as codes
from kafkalite_server.group.offsets import OffsetCommitEntry, TopicPartition

from .fakes import GROUP, FakeScheduler, MemoryStore, stable_group

SUBSCRIBED = TopicPartition("subscribed", 0)
OTHER = TopicPartition("other", 0)
OTHER_1 = TopicPartition("other", 1)


def subscribing_to(*topics: str) -> list[tuple[str, bytes]]:
    return [("range", ConsumerProtocolSubscription(list(topics)).encode(1))]


def commit_simple(coordinator: GroupCoordinator, *partitions: TopicPartition) -> None:
    """Commits with no member and generation -1, as an admin or a standalone consumer does."""
    results = coordinator.commit_offsets(
        GROUP, -1, "", {tp: OffsetCommitEntry(7) for tp in partitions}
    )
    assert set(results.values()) == {codes.NONE}


def test_offsets_of_topics_nobody_consumes_are_deleted_and_tombstoned(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    commit_simple(coordinator, SUBSCRIBED, OTHER, OTHER_1)
    members, generation = stable_group(
        coordinator, scheduler, 2, protocols=subscribing_to("subscribed")
    )

    result = coordinator.delete_offsets(GROUP, [SUBSCRIBED, OTHER])

    assert result.error == codes.NONE
    assert result.partitions == {
        SUBSCRIBED: codes.GROUP_SUBSCRIBED_TO_TOPIC,
        OTHER: codes.NONE,
    }
    assert store.deleted_offsets == [(coordinator.partition_for(GROUP), GROUP, [OTHER])]
    remaining = coordinator.fetch_offsets(GROUP, None).offsets
    assert set(remaining) == {SUBSCRIBED, OTHER_1}
    # The members were not disturbed.
    assert coordinator.heartbeat(GROUP, generation, members[0]) == codes.NONE


def test_an_empty_group_may_lose_every_offset_and_then_is_gone(
    coordinator: GroupCoordinator, store: MemoryStore
) -> None:
    commit_simple(coordinator, SUBSCRIBED, OTHER)
    first = coordinator.delete_offsets(GROUP, [SUBSCRIBED])
    assert first.partitions == {SUBSCRIBED: codes.NONE}
    assert coordinator.group(GROUP) is not None  # OTHER is still committed

    second = coordinator.delete_offsets(GROUP, [OTHER, OTHER_1])  # OTHER_1 never committed

    assert second.partitions == {OTHER: codes.NONE, OTHER_1: codes.NONE}
    # The last offsets go in one batch with the group's own tombstone.
    assert store.deleted == [(coordinator.partition_for(GROUP), GROUP, [OTHER])]
    assert coordinator.group(GROUP) is None
    assert coordinator.delete_offsets(GROUP, [OTHER]).error == codes.GROUP_ID_NOT_FOUND


def test_unknown_subscriptions_protect_every_topic(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    commit_simple(coordinator, OTHER)
    stable_group(coordinator, scheduler, 1, protocols=[("range", b"not a subscription")])
    result = coordinator.delete_offsets(GROUP, [OTHER])
    assert result.partitions == {OTHER: codes.GROUP_SUBSCRIBED_TO_TOPIC}


def test_a_group_of_another_protocol_type_is_refused_while_it_has_members(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    stable_group(coordinator, scheduler, 1, protocol_type="connect")
    assert coordinator.delete_offsets(GROUP, [OTHER]).error == codes.NON_EMPTY_GROUP


def test_unknown_and_invalid_groups(coordinator: GroupCoordinator) -> None:
    assert coordinator.delete_offsets("no-such-group", [OTHER]).error == codes.GROUP_ID_NOT_FOUND
    assert coordinator.delete_offsets("", [OTHER]).error == codes.INVALID_GROUP_ID


def test_a_failed_write_keeps_the_offsets(
    coordinator: GroupCoordinator, store: MemoryStore
) -> None:
    commit_simple(coordinator, OTHER, OTHER_1)
    store.fail_with = KafkaStorageError("disk gone")
    result = coordinator.delete_offsets(GROUP, [OTHER])
    assert result.partitions == {OTHER: codes.NOT_COORDINATOR}
    group = coordinator.group(GROUP)
    assert group is not None and group.is_state(GroupState.EMPTY)
    assert set(group.offsets) == {OTHER, OTHER_1}
