"""SubscriptionState: exclusive subscription modes, positions, pauses, resets, commits."""

from __future__ import annotations

import pytest

from kafkalite.consumer.subscription_state import (
    IllegalStateError,
    SubscriptionState,
    SubscriptionType,
)
from kafkalite.structs import OffsetAndMetadata, TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_subscribe_and_assign_are_exclusive() -> None:
    state = SubscriptionState("latest")
    state.subscribe(["a"])
    with pytest.raises(IllegalStateError):
        state.assign_from_user([A0])
    with pytest.raises(IllegalStateError):
        state.subscribe_pattern("a.*")
    state.unsubscribe()
    state.assign_from_user([A0])
    assert state.type is SubscriptionType.USER_ASSIGNED
    assert state.topics == {"a"}


def test_group_assignment_keeps_only_subscribed_topics() -> None:
    state = SubscriptionState("latest")
    state.subscribe(["a"])
    assert state.assign_from_subscribed([A0, A1, B0]) == {A0, A1}
    assert state.assigned_partitions() == {A0, A1}


def test_positions_pauses_and_consumed_offsets() -> None:
    state = SubscriptionState("earliest")
    state.assign_from_user([A0, A1])
    assert state.missing_positions() == [A0, A1]
    assert state.fetchable_partitions() == []
    state.seek(A0, 5)
    state.request_reset(A1)
    assert state.awaiting_reset() == {A1: "earliest"}
    assert state.missing_positions() == []
    state.seek(A1, 7)
    state.pause(A1)
    assert state.fetchable_partitions() == [A0]
    assert state.paused() == {A1}
    state.resume(A1)
    assert state.all_consumed() == {A0: OffsetAndMetadata(5), A1: OffsetAndMetadata(7)}


def test_positions_survive_a_reassignment_of_the_same_partition() -> None:
    state = SubscriptionState("latest")
    state.assign_from_user([A0])
    state.seek(A0, 3)
    version = state.assignment_version
    state.assign_from_user([A0, A1])
    assert state.position(A0) == 3
    assert state.assignment_version > version


@pytest.mark.parametrize("offset", [-1, "3", 1.5, True])
def test_seek_rejects_bad_offsets(offset: object) -> None:
    state = SubscriptionState("latest")
    state.assign_from_user([A0])
    with pytest.raises(ValueError):
        state.seek(A0, offset)  # type: ignore[arg-type]


def test_unassigned_partition_is_named() -> None:
    state = SubscriptionState("latest")
    with pytest.raises(IllegalStateError, match="partition=1"):
        state.position(A1)


def test_pattern_matches_whole_names() -> None:
    state = SubscriptionState("latest")
    state.subscribe_pattern(r"orders-\d+")
    assert state.matching_topics(["orders-1", "orders-12x", "x-orders-1"]) == {"orders-1"}
