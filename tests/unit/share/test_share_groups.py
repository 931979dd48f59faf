"""Share-group membership and the share coordinator, sans-IO on a fake clock: joining,
epochs and fencing, initialized partitions spread over the members, session expiry,
and both state machines replayed from the records they wrote."""

from __future__ import annotations

import uuid

import pytest
from fake_clock import FakeClock as Clock
from group_records_log import Log, owning_everything

from kafkalite.protocol.errors import (
    FencedLeaderEpochError,
    FencedMemberEpochError,
    FencedStateEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    NotCoordinatorError,
    UnknownMemberIdError,
)
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.group.group_timeouts import SHARE_GROUP_TIMEOUTS, GroupTimeouts
from kafkalite_server.share.coordinator import ShareCoordinator
from kafkalite_server.share.group import ShareGroups, Topics
from kafkalite_server.share.records import StateKey
from kafkalite_server.share.state import PartitionState, StateBatch

ORDERS = uuid.uuid5(uuid.NAMESPACE_DNS, "orders")


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_groups(clock: Clock, log: Log, ownership: Ownership | None = None, *,
                classic: tuple[str, ...] = (), max_size: int = 10) -> ShareGroups:
    topics = Topics(lambda topic: 2 if topic == "orders" else None,
                    lambda topic: ORDERS if topic == "orders" else uuid.uuid4())
    return ShareGroups(ownership or owning_everything(), log.append, topics, clock,
                       timeouts=GroupTimeouts(SHARE_GROUP_TIMEOUTS), max_size=max_size,
                       other_group_type=lambda group: "classic" if group in classic else None)


def test_members_join_and_share_the_initialized_partitions(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    joined = groups.heartbeat("g", "a", 0, None, ["orders"], client_id="c", client_host="/h")
    assert (joined.error, joined.member_id, joined.member_epoch, joined.assignment) == (
        0, "a", 1, {})
    assert groups.uninitialized("g") == [("orders", 0), ("orders", 1)]
    groups.initialized("g", [("orders", 0), ("orders", 1)])
    assert groups.uninitialized("g") == []
    answer = groups.heartbeat("g", "a", 1, None, None, client_id="c", client_host="/h")
    assert (answer.member_epoch, answer.assignment) == (2, {ORDERS: (0, 1)})
    second = groups.heartbeat("g", "b", 0, None, ["orders"], client_id="c", client_host="/h")
    assert (second.member_epoch, second.assignment) == (3, {ORDERS: (1,)})
    # the first member moves to the new epoch keeping the partition it still has
    assert groups.heartbeat("g", "a", 2, None, None, client_id="c",
                            client_host="/h").assignment == {ORDERS: (0,)}
    assert groups.heartbeat("g", "a", 3, None, None, client_id="c",
                            client_host="/h").assignment is None  # nothing new
    # a third member on two partitions shares one: each member reads one partition
    third = groups.heartbeat("g", "c", 0, None, ["orders"], client_id="c", client_host="/h")
    assert (third.member_epoch, third.assignment) == (4, {ORDERS: (0,)})
    group = groups.group("g")
    assert group is not None
    assert {m: member.assignment for m, member in group.members.items()} == {
        "a": {ORDERS: (0,)}, "b": {ORDERS: (1,)}, "c": {ORDERS: (0,)}}


def test_epochs_are_checked(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    groups.heartbeat("g", "a", 0, None, ["orders"], client_id="", client_host="")
    groups.heartbeat("g", "b", 0, None, ["orders"], client_id="", client_host="")
    assert groups.heartbeat("g", "a", 7, None, None, client_id="",
                            client_host="").error == FencedMemberEpochError.errno
    assert groups.heartbeat("g", "a", 1, None, None, client_id="",
                            client_host="").error == 0  # its previous epoch: a lost answer
    assert groups.heartbeat("g", "zz", 2, None, None, client_id="",
                            client_host="").error == UnknownMemberIdError.errno
    assert groups.heartbeat("g", "a", 0, None, None, client_id="",
                            client_host="").error == InvalidRequestError.errno
    left = groups.heartbeat("g", "a", -1, None, None, client_id="", client_host="")
    assert (left.error, left.member_epoch) == (0, -1)
    assert sorted(groups.group("g").members) == ["b"]  # type: ignore[union-attr]


def test_members_joining_between_two_heartbeats_do_not_fence_a_member(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    first = groups.heartbeat("g", "a", 0, None, ["orders"], client_id="", client_host="")
    groups.initialized("g", [("orders", 0), ("orders", 1)])
    for member in ("b", "c"):  # the group moves on twice before "a" heartbeats again
        groups.heartbeat("g", member, 0, None, ["orders"], client_id="", client_host="")
    caught_up = groups.heartbeat("g", "a", first.member_epoch, None, None, client_id="",
                                 client_host="")
    assert (caught_up.error, caught_up.member_epoch) == (0, 4)
    assert caught_up.assignment in ({ORDERS: (0,)}, {ORDERS: (1,)})
    # its answer lost, it may ask again with the epoch it had; an older one is fenced
    assert groups.heartbeat("g", "a", first.member_epoch, None, None, client_id="",
                            client_host="").error == 0
    groups.heartbeat("g", "a", 4, None, None, client_id="", client_host="")
    assert groups.heartbeat("g", "a", first.member_epoch, None, None, client_id="",
                            client_host="").error == FencedMemberEpochError.errno


def test_group_id_space_limits_and_ownership(clock: Clock) -> None:
    groups = make_groups(clock, Log(), classic=("classic-group",), max_size=1)
    assert groups.heartbeat("classic-group", "a", 0, None, ["orders"], client_id="",
                            client_host="").error == GroupIdNotFoundError.errno
    groups.heartbeat("g", "a", 0, None, ["orders"], client_id="", client_host="")
    assert groups.heartbeat("g", "b", 0, None, ["orders"], client_id="",
                            client_host="").error == GroupMaxSizeReachedError.errno
    elsewhere = make_groups(clock, Log(), Ownership(1))
    assert elsewhere.heartbeat("g", "a", 0, None, ["orders"], client_id="",
                               client_host="").error == NotCoordinatorError.errno


def test_a_member_that_stops_heartbeating_is_removed(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    groups.heartbeat("g", "a", 0, None, ["orders"], client_id="", client_host="")
    groups.heartbeat("g", "b", 0, None, ["orders"], client_id="", client_host="")
    clock.now += 30_000
    groups.heartbeat("g", "b", 2, None, None, client_id="", client_host="")
    clock.now += 15_000
    groups.expire_members()
    group = groups.group("g")
    assert group is not None and list(group.members) == ["b"] and group.state == "Stable"


def test_a_groups_own_session_timeout_and_heartbeat_interval_apply_to_it(
        clock: Clock) -> None:
    groups = make_groups(clock, Log())
    assert groups.set_configs("g", {"share.session.timeout.ms": "55000",
                                    "share.heartbeat.interval.ms": "8000"}) == 0
    groups.heartbeat("g", "a", 0, None, ["orders"], client_id="", client_host="")
    assert (groups.heartbeat_interval_ms("g"), groups.heartbeat_interval_ms("h")) == (8000, 5000)
    clock.now += 50_000  # past the broker's 45 s
    groups.expire_members()
    group = groups.group("g")
    assert group is not None and list(group.members) == ["a"]
    clock.now += 5000
    groups.expire_members()
    assert not group.members


def test_groups_come_back_from_their_records(clock: Clock) -> None:
    log = Log()
    groups = make_groups(clock, log)
    groups.heartbeat("g", "a", 0, "rack-1", ["orders"], client_id="c1", client_host="/h1")
    groups.heartbeat("g", "b", 0, None, ["orders"], client_id="c2", client_host="/h2")
    groups.initialized("g", [("orders", 0), ("orders", 1)])
    groups.heartbeat("g", "b", -1, None, None, client_id="", client_host="")
    assert groups.set_configs("g", {"share.auto.offset.reset": "earliest"}) == 0
    replayed = make_groups(clock, Log(), Ownership(1))
    loader = replayed.loader(0)
    loader.load(log.records(0))
    replayed.ownership.begin_loading(0, 1)
    replayed.ownership.complete_loading(0)
    loader.complete()
    group, original = replayed.group("g"), groups.group("g")
    assert group is not None and original is not None
    assert (group.group_epoch, group.initialized) == (original.group_epoch, original.initialized)
    assert list(group.members) == ["a"]
    member = group.members["a"]
    assert (member.member_epoch, member.assignment, member.rack_id, member.client_id,
            member.subscribed_topics) == (original.members["a"].member_epoch,
                                          {ORDERS: (0, 1)}, "rack-1", "c1", ("orders",))
    assert replayed.configs("g") == {"share.auto.offset.reset": "earliest"}
    assert replayed.heartbeat("g", "a", member.member_epoch, None, None, client_id="c1",
                              client_host="/h1").error == 0


def test_a_replayed_assignment_is_where_the_next_one_starts(clock: Clock) -> None:
    log = Log()
    groups = make_groups(clock, log)
    for member in ("a", "b"):
        groups.heartbeat("g", member, 0, None, ["orders"], client_id="", client_host="")
    groups.initialized("g", [("orders", 0), ("orders", 1)])
    original = groups.group("g")
    assert original is not None
    split = {m: member.assignment for m, member in original.members.items()}
    assert sorted(split.values(), key=str) == sorted([{ORDERS: (0,)}, {ORDERS: (1,)}], key=str)
    replayed = make_groups(clock, Log(), Ownership(1))
    loader = replayed.loader(0)
    loader.load(log.records(0))
    replayed.ownership.begin_loading(0, 1)
    replayed.ownership.complete_loading(0)
    loader.complete()
    joined = replayed.heartbeat("g", "c", 0, None, ["orders"], client_id="", client_host="")
    group = replayed.group("g")
    assert joined.error == 0 and group is not None
    assert {m: group.members[m].assignment for m in ("a", "b")} == split  # nothing moved
    assert joined.assignment in split.values()


def test_groups_forget_deleted_topics(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    groups.heartbeat("g", "a", 0, None, ["orders"], client_id="", client_host="")
    groups.initialized("g", [("orders", 0)])
    groups.topics_deleted(lambda topic: topic == "orders", None)
    group = groups.group("g")
    assert group is not None and group.initialized == {} and group.members["a"].assignment == {}


# ------------------------------------------------------------------ the share coordinator


def make_coordinator(log: Log, *, exists: bool = True) -> ShareCoordinator:
    return ShareCoordinator(owning_everything(), log.append, updates_per_snapshot=3,
                            topic_exists=lambda _id: exists)


KEY = StateKey("g", ORDERS, 0)


def test_the_share_coordinator_keeps_and_fences_state() -> None:
    coordinator = make_coordinator(Log())
    assert coordinator.read(KEY, 3) == (0, PartitionState(leader_epoch=3))
    assert coordinator.initialize(KEY, 0, 10) == 0
    assert coordinator.read(KEY, 4) == (0, PartitionState(0, 10, 4))
    assert coordinator.write(KEY, 0, 4, 12, [StateBatch(12, 14, 2, 1),
                                             StateBatch(15, 15, 0, 2)]) == 0
    assert coordinator.write(KEY, 0, 3, 20, []) == FencedLeaderEpochError.errno  # old leader
    assert coordinator.initialize(KEY, 0, 50) == 0  # at its epoch already: nothing changes
    assert coordinator.state(KEY).start_offset == 12  # type: ignore[union-attr]
    assert coordinator.initialize(KEY, 1, 100) == 0  # an operator's reset
    assert coordinator.write(KEY, 0, 4, 30, []) == FencedStateEpochError.errno
    assert coordinator.write(KEY, 1, 4, 100, [StateBatch(99, 98, 0, 0)]) \
        == InvalidRequestError.errno
    assert coordinator.read(KEY, -1)[1].start_offset == 100  # an operator's read fences no one


def test_the_share_coordinator_state_comes_back_from_snapshots_and_updates() -> None:
    log = Log()
    coordinator = make_coordinator(log)
    coordinator.initialize(KEY, 0, 0)
    for start in range(1, 8):  # updates, and a snapshot every third
        coordinator.write(KEY, 0, 1, start, [StateBatch(start, start + 1, 0, start)])
    other = StateKey("g", ORDERS, 1)
    coordinator.initialize(other, 0, 5)
    coordinator.delete(other)
    replayed = make_coordinator(Log())
    loader = replayed.loader(0)
    loader.load(log.records(0))
    loader.complete()
    assert replayed.state(KEY) == coordinator.state(KEY)
    assert replayed.state(other) is None
    assert coordinator.state(KEY) == PartitionState(0, 7, 1, (StateBatch(7, 8, 0, 7),))


def test_the_share_coordinator_deletes_state_of_deleted_topics() -> None:
    log = Log()
    coordinator = make_coordinator(log, exists=False)
    coordinator.initialize(KEY, 0, 0)
    coordinator.topics_deleted(lambda _topic: True, None)
    assert coordinator.state(KEY) is None
