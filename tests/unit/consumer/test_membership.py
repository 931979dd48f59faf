"""The membership state machine: every transition in its table, on a fake clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from kafkalite.consumer.membership import (
    NO_GENERATION,
    TRANSITIONS,
    Event,
    Membership,
    MemberState,
)
from kafkalite.errors import IllegalStateError

if TYPE_CHECKING:
    from fake_clock import FakeClock


def fixed() -> float:
    return 0.0


def stable() -> Membership:
    member = Membership(100, fixed)
    member.join_sent()
    member.joined(5, "m-1")
    member.synced()
    return member


def test_join_sync_reaches_stable_with_generation_and_id() -> None:
    member = Membership(100, fixed)
    assert (member.state, member.rejoin_needed, member.needs_revoke) == (
        MemberState.UNJOINED, True, True)
    member.join_sent()
    assert member.state is MemberState.JOINING and not member.needs_revoke
    member.joined(5, "m-1")
    assert member.state is MemberState.AWAITING_SYNC
    assert member.identity() == (5, "m-1")
    member.synced()
    assert member.state is MemberState.STABLE
    assert member.holds_assignment and not member.rejoin_needed


def test_member_id_required_keeps_the_assigned_id_for_the_next_join() -> None:
    member = Membership(100, fixed)
    member.join_sent()
    member.rejoin(member_id="given")
    assert member.state is MemberState.JOINING and member.member_id == "given"
    assert member.retry_delay() == 0  # no backoff: rejoin at once with the id


def test_retriable_errors_back_off_on_the_clock(clock: FakeClock) -> None:
    member = Membership(250, clock)
    member.join_sent()
    member.rejoin(backoff=True)
    assert member.retry_delay() == pytest.approx(0.25)
    clock.advance(0.1)
    assert member.retry_delay() == pytest.approx(0.15)
    clock.advance(0.2)
    assert member.retry_delay() == 0


def test_rebalance_while_stable_keeps_the_assignment_until_rejoining() -> None:
    member = stable()
    member.rejoin()
    assert member.state is MemberState.REJOIN_DUE
    assert member.holds_assignment and member.rejoin_needed and member.needs_revoke
    assert member.identity() == (5, "m-1")  # heartbeats and commits still use it
    member.join_sent()
    assert member.state is MemberState.JOINING and not member.holds_assignment


def test_fenced_while_stable_drops_generation_and_maybe_member_id() -> None:
    member = stable()
    member.fenced(forget_member=False)
    assert (member.state, member.identity()) == (MemberState.UNJOINED, (NO_GENERATION, "m-1"))
    member = stable()
    member.fenced(forget_member=True)
    assert member.identity() == (NO_GENERATION, "")
    # a late commit still goes out under the last generation: the coordinator fences it
    assert member.commit_identity() == (5, "m-1")


def test_fenced_during_a_rebalance_stays_joining() -> None:
    member = Membership(100, fixed)
    member.join_sent()
    member.joined(7, "m-2")
    member.fenced(forget_member=True)
    assert member.state is MemberState.JOINING and member.identity() == (NO_GENERATION, "")
    assert not member.needs_revoke  # the partitions were revoked when the rebalance began


def test_an_answer_for_an_older_generation_only_asks_to_rejoin() -> None:
    member = stable()
    member.fenced(forget_member=True, generation=4)
    assert member.state is MemberState.REJOIN_DUE and member.identity() == (5, "m-1")


def joining() -> Membership:
    member = Membership(100, fixed)
    member.join_sent()
    member.rejoin(member_id="m-1")
    return member


def test_leaving_resets_the_generation_from_any_state() -> None:
    for member in (joining(), stable()):
        assert member.left(forget_member=True) == "m-1"
        assert (member.state, member.identity()) == (MemberState.UNJOINED,
                                                     (NO_GENERATION, ""))
    member = stable()
    member.left(forget_member=False)  # static members keep their id
    assert member.member_id == "m-1"


def test_never_joined_has_no_commit_identity() -> None:
    assert Membership(100, fixed).commit_identity() is None


def test_events_outside_the_table_are_refused() -> None:
    member = Membership(100, fixed)
    with pytest.raises(IllegalStateError, match="synced is not valid while unjoined"):
        member.synced()
    with pytest.raises(IllegalStateError):
        member.joined(1, "m")
    assert member.state is MemberState.UNJOINED


def test_the_table_covers_leaving_and_rejoining_from_every_state() -> None:
    for state in MemberState:
        assert (state, Event.LEFT) in TRANSITIONS
        assert (state, Event.REJOIN) in TRANSITIONS
        assert (state, Event.FENCED) in TRANSITIONS
    targets = set(TRANSITIONS.values())
    assert targets == set(MemberState)  # every state is reachable
