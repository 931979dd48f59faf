"""The member side of the modern group protocols' heartbeat (consumer and share groups),
sans-IO: what each answer does to the epoch, the assignment and the next heartbeat."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkalite.consumer.heartbeat_membership import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    HeartbeatMembership,
    Outcome,
    outcome_of,
)
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    GroupAuthorizationFailedError,
    NotCoordinatorError,
    UnknownMemberIdError,
    UnsupportedAssignorError,
)

ORDERS = uuid.uuid5(uuid.NAMESPACE_DNS, "orders")


def answer(error: int = 0, epoch: int = 1, assigned: dict[uuid.UUID, list[int]] | None = None,
           interval_ms: int = 3000) -> dict[str, Any]:
    return {"error_code": error, "error_message": None, "member_epoch": epoch,
            "heartbeat_interval_ms": interval_ms,
            "assignment": None if assigned is None else {"topic_partitions": [
                {"topic_id": t, "partitions": ps} for t, ps in assigned.items()]}}


def joined(now: float = 0.0) -> HeartbeatMembership:
    member = HeartbeatMembership("g", retry_backoff=0.5, active=True)
    member.in_flight = True
    member.answered(JOIN_EPOCH, ["orders"], answer(epoch=1, assigned={ORDERS: [0, 1]}), now)
    return member


@pytest.mark.parametrize(("code", "outcome"), [
    (0, Outcome.ANSWERED),
    (UnknownMemberIdError.errno, Outcome.REJOIN),
    (FencedMemberEpochError.errno, Outcome.REJOIN),
    (NotCoordinatorError.errno, Outcome.FIND_COORDINATOR),
    (CoordinatorNotAvailableError.errno, Outcome.FIND_COORDINATOR),
    (CoordinatorLoadInProgressError.errno, Outcome.RETRY),
    (GroupAuthorizationFailedError.errno, Outcome.FATAL),
    (UnsupportedAssignorError.errno, Outcome.FATAL),
])
def test_each_error_code_has_one_outcome(code: int, outcome: Outcome) -> None:
    assert outcome_of(code) is outcome


def test_an_answer_sets_the_epoch_the_assignment_and_the_next_heartbeat() -> None:
    member = joined(now=10.0)
    assert (member.epoch, member.assignment, member.in_flight) == (1, {ORDERS: (0, 1)}, False)
    assert member.next_at == 13.0
    assert not member.due(12.9) and member.due(13.0)
    assert member.sent_subscription == frozenset({"orders"})


def test_an_answer_without_an_assignment_keeps_the_last_one() -> None:
    member = joined()
    member.answered(1, None, answer(epoch=2), 1.0)
    assert (member.epoch, member.assignment) == (2, {ORDERS: (0, 1)})


def test_the_subscription_is_sent_on_a_join_and_on_a_change_only() -> None:
    member = HeartbeatMembership("g", retry_backoff=0.5, active=True)
    assert member.subscription_to_send(frozenset({"b", "a"})) == ["a", "b"]
    member = joined()
    assert member.subscription_to_send(frozenset({"orders"})) is None
    assert member.subscription_to_send(frozenset({"orders", "audit"})) == ["audit", "orders"]


def test_a_fenced_member_loses_its_assignment_and_joins_again_at_once() -> None:
    member = joined()
    outcome = member.answered(1, None, answer(FencedMemberEpochError.errno), 5.0)
    assert outcome is Outcome.REJOIN
    assert (member.epoch, member.assignment, member.next_at) == (JOIN_EPOCH, None, 5.0)
    assert member.subscription_to_send(frozenset({"orders"})) == ["orders"]


def test_a_moved_coordinator_is_asked_at_once_and_a_loading_one_after_the_backoff() -> None:
    member = joined()
    assert member.answered(1, None, answer(NotCoordinatorError.errno), 5.0) \
        is Outcome.FIND_COORDINATOR
    assert (member.epoch, member.next_at) == (1, 5.0)
    assert member.answered(1, None, answer(CoordinatorLoadInProgressError.errno), 6.0) \
        is Outcome.RETRY
    assert (member.epoch, member.next_at) == (1, 6.5)


def test_a_fatal_answer_stops_the_member_with_the_error() -> None:
    member = joined()
    assert member.answered(1, None, answer(GroupAuthorizationFailedError.errno), 5.0) \
        is Outcome.FATAL
    assert isinstance(member.fatal, GroupAuthorizationFailedError)
    assert not member.active and not member.due(100.0)


def test_the_answer_to_a_leave_does_not_move_the_epoch() -> None:
    member = joined()
    member.answered(LEAVE_EPOCH, None, answer(epoch=LEAVE_EPOCH), 1.0)
    assert member.epoch == 1


def test_a_lost_answer_is_retried_after_the_backoff() -> None:
    member = joined()
    member.in_flight = True
    member.failed(7.0)
    assert (member.in_flight, member.next_at) == (False, 7.5)
