"""Static membership (KIP-345) on a fake clock: a restarted member takes its old place back."""

from __future__ import annotations

from kafkalite_server.group import GroupCoordinator, GroupState, LeavingMember
from kafkalite_server.group import error_codes as codes
from kafkalite_server.group.offsets import OffsetCommitEntry

from .fakes import GROUP, TP0, FakeScheduler, MemoryStore, join, sync

SESSION_MS = 10_000
REBALANCE_MS = 30_000
RANGE_FIRST = [("range", b"r"), ("roundrobin", b"rr")]


def static_group(
    coordinator: GroupCoordinator,
    scheduler: FakeScheduler,
    instances: list[str],
    protocols: list[tuple[str, bytes]] | None = None,
) -> tuple[dict[str, str], int]:
    """Bring one static member per instance id to Stable, each assigned its instance id's bytes.
    Returns instance id -> member id, and the generation."""
    pending = {
        instance: join(
            coordinator, client_id=f"client-{instance}", instance_id=instance, protocols=protocols
        )
        for instance in instances
    }
    scheduler.advance(0)
    results = {instance: answers[0] for instance, answers in pending.items()}
    assert all(r.error == 0 for r in results.values()), results
    ids = {instance: r.member_id for instance, r in results.items()}
    generation = results[instances[0]].generation_id
    leader = results[instances[0]].leader_id
    assignment = {member_id: instance.encode() for instance, member_id in ids.items()}
    follower_syncs = [
        sync(coordinator, member_id, generation, instance_id=instance)
        for instance, member_id in ids.items()
        if member_id != leader
    ]
    leader_instance = next(i for i, m in ids.items() if m == leader)
    sync(coordinator, leader, generation, assignment, instance_id=leader_instance)
    assert all(answers and answers[0].error == 0 for answers in follower_syncs)
    return ids, generation


def state(coordinator: GroupCoordinator) -> GroupState:
    group = coordinator.group(GROUP)
    assert group is not None
    return group.state


def test_restarted_static_member_gets_its_assignment_back_without_a_rebalance(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    ids, generation = static_group(coordinator, scheduler, ["a", "b"])
    leader = ids["a"]
    stored_before = len(store.groups)

    [rejoined] = join(coordinator, client_id="client-b", instance_id="b")  # answered at once

    assert rejoined.error == 0
    assert rejoined.member_id not in ids.values()
    assert rejoined.member_id.startswith("b-")  # Kafka names static members by instance id
    assert rejoined.generation_id == generation
    assert (rejoined.leader_id, rejoined.members) == (leader, [])
    assert state(coordinator) is GroupState.STABLE
    [synced] = sync(coordinator, rejoined.member_id, generation, instance_id="b")
    assert (synced.error, synced.assignment) == (0, b"b")
    # The other member is never asked to rebalance.
    assert coordinator.heartbeat(GROUP, generation, leader, "a") == codes.NONE
    # The new member id is persisted, so the group's record names the live incarnation.
    [(_, _, record)] = store.groups[stored_before:]
    assert sorted(m.member_id for m in record.members) == sorted([leader, rejoined.member_id])


def test_restarted_leader_keeps_leadership_under_its_new_id(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    ids, generation = static_group(coordinator, scheduler, ["a", "b"])
    [rejoined] = join(coordinator, client_id="client-a", instance_id="a")
    # It is told the old leader id, so it does not compute an assignment nobody would use.
    assert (rejoined.error, rejoined.leader_id, rejoined.members) == (0, ids["a"], [])
    group = coordinator.group(GROUP)
    assert group is not None and group.leader_id == rejoined.member_id
    [synced] = sync(coordinator, rejoined.member_id, generation, instance_id="a")
    assert synced.assignment == b"a"


def test_the_old_incarnation_is_fenced_everywhere(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    ids, generation = static_group(coordinator, scheduler, ["a", "b"])
    old = ids["b"]
    [rejoined] = join(coordinator, client_id="client-b", instance_id="b")
    assert rejoined.error == 0

    assert coordinator.heartbeat(GROUP, generation, old, "b") == codes.FENCED_INSTANCE_ID
    [synced] = sync(coordinator, old, generation, instance_id="b")
    assert synced.error == codes.FENCED_INSTANCE_ID
    commit = coordinator.commit_offsets(
        GROUP, generation, old, {TP0: OffsetCommitEntry(5)}, group_instance_id="b"
    )
    assert commit == {TP0: codes.FENCED_INSTANCE_ID}
    [joined] = join(coordinator, old, client_id="client-b", instance_id="b")
    assert joined.error == codes.FENCED_INSTANCE_ID
    left = coordinator.leave_group(GROUP, [LeavingMember(old, "b")])
    assert left.member_errors == [codes.FENCED_INSTANCE_ID]
    # None of that disturbed the group or the new incarnation.
    assert state(coordinator) is GroupState.STABLE
    assert coordinator.heartbeat(GROUP, generation, rejoined.member_id, "b") == codes.NONE
    new_commit = coordinator.commit_offsets(
        GROUP, generation, rejoined.member_id, {TP0: OffsetCommitEntry(5)}, group_instance_id="b"
    )
    assert new_commit == {TP0: codes.NONE}


def test_an_unknown_instance_id_is_an_unknown_member(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    ids, generation = static_group(coordinator, scheduler, ["a"])
    assert coordinator.heartbeat(GROUP, generation, ids["a"], "zzz") == codes.UNKNOWN_MEMBER_ID


def test_a_static_member_that_vanishes_keeps_its_partitions_until_its_session_expires(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    ids, generation = static_group(coordinator, scheduler, ["a", "b"])
    # "b" stops heartbeating without a LeaveGroup (a static member's close does not send one).
    for _ in range(4):
        scheduler.advance(SESSION_MS // 4 - 1)
        assert coordinator.heartbeat(GROUP, generation, ids["a"], "a") == codes.NONE
    assert state(coordinator) is GroupState.STABLE
    scheduler.advance(10)
    assert coordinator.heartbeat(GROUP, generation, ids["a"], "a") == codes.REBALANCE_IN_PROGRESS
    group = coordinator.group(GROUP)
    assert group is not None and "b" not in group.static_members


def test_a_static_member_that_misses_a_rebalance_stays_in_the_group(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    ids, generation = static_group(coordinator, scheduler, ["a", "b"])
    newcomer = join(coordinator, client_id="c", instance_id="c")
    assert state(coordinator) is GroupState.PREPARING_REBALANCE
    rejoin_a = join(coordinator, ids["a"], client_id="client-a", instance_id="a")
    # "b" keeps heartbeating (so its session lives) but does not rejoin; the rebalance
    # gives up waiting for it after the rebalance timeout.
    while not rejoin_a:
        assert coordinator.heartbeat(GROUP, generation, ids["b"], "b") in (
            codes.REBALANCE_IN_PROGRESS,
            codes.ILLEGAL_GENERATION,
        )
        scheduler.advance(SESSION_MS // 2)
    assert newcomer and newcomer[0].error == 0
    [leader_view] = rejoin_a
    assert leader_view.error == 0 and leader_view.generation_id == generation + 1
    # Unlike a dynamic member, "b" is still a member and gets assigned partitions.
    assert ids["b"] in {m.member_id for m in leader_view.members}
    assert len(leader_view.members) == 3


def test_leave_by_instance_id_alone_removes_the_static_member(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    ids, generation = static_group(coordinator, scheduler, ["a", "b"])
    result = coordinator.leave_group(GROUP, [LeavingMember("", "b"), LeavingMember("", "nope")])
    assert result.member_errors == [codes.NONE, codes.UNKNOWN_MEMBER_ID]
    group = coordinator.group(GROUP)
    assert group is not None and ids["b"] not in group.members
    assert coordinator.heartbeat(GROUP, generation, ids["a"], "a") == codes.REBALANCE_IN_PROGRESS


def test_a_rejoin_that_changes_the_chosen_protocol_rebalances(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    ids, generation = static_group(coordinator, scheduler, ["a", "b"], protocols=RANGE_FIRST)
    # "a" leads; coming back preferring roundrobin ties the vote, and the leader's order wins.
    rejoined = join(
        coordinator, client_id="client-a", instance_id="a", protocols=RANGE_FIRST[::-1]
    )
    assert rejoined == []  # parked: a real rebalance
    assert state(coordinator) is GroupState.PREPARING_REBALANCE
    assert coordinator.heartbeat(GROUP, generation, ids["b"], "b") == codes.REBALANCE_IN_PROGRESS


def test_a_rejoin_during_completing_rebalance_starts_over_and_fences_the_parked_sync(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    pending = {i: join(coordinator, client_id=i, instance_id=i) for i in ("a", "b")}
    scheduler.advance(0)
    results = {i: answers[0] for i, answers in pending.items()}
    follower = next(i for i, r in results.items() if r.member_id != r.leader_id)
    parked_sync = sync(
        coordinator, results[follower].member_id, results[follower].generation_id,
        instance_id=follower,
    )
    assert parked_sync == [] and state(coordinator) is GroupState.COMPLETING_REBALANCE

    rejoined = join(coordinator, client_id=follower, instance_id=follower)

    assert [r.error for r in parked_sync] == [codes.FENCED_INSTANCE_ID]
    assert rejoined == []
    assert state(coordinator) is GroupState.PREPARING_REBALANCE


def test_a_replaced_incarnation_parked_in_join_is_fenced(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    ids, _ = static_group(coordinator, scheduler, ["a", "b"])
    join(coordinator, client_id="c")  # a newcomer starts a rebalance
    parked = join(coordinator, ids["b"], client_id="client-b", instance_id="b")
    assert parked == []
    replacement = join(coordinator, client_id="client-b", instance_id="b")
    assert [r.error for r in parked] == [codes.FENCED_INSTANCE_ID]
    join(coordinator, ids["a"], client_id="client-a", instance_id="a")
    scheduler.advance(0)
    [result] = replacement
    assert result.error == 0 and result.member_id != ids["b"]
