"""JoinGroup / SyncGroup / Heartbeat / LeaveGroup and the timers, on a fake clock."""

from kafkalite_server.group import GroupCoordinator, GroupState, LeavingMember
from kafkalite_server.group import error_codes as codes

from .fakes import GROUP, FakeScheduler, MemoryStore, join, make_coordinator, stable_group, sync


def state(coordinator: GroupCoordinator) -> GroupState:
    group = coordinator.group(GROUP)
    assert group is not None
    return group.state


def test_single_member_happy_path(coordinator: GroupCoordinator, scheduler: FakeScheduler) -> None:
    answers = join(coordinator, client_id="solo")
    assert answers == []  # parked until the (zero) initial delay elapses
    scheduler.advance(0)
    [result] = answers
    assert result.error == 0
    assert result.member_id.startswith("solo-")
    assert result.leader_id == result.member_id
    assert result.generation_id == 1
    assert result.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in result.members] == [
        (result.member_id, b"range-meta")
    ]
    assert state(coordinator) is GroupState.COMPLETING_REBALANCE

    [synced] = sync(coordinator, result.member_id, 1, {result.member_id: b"mine"})
    assert (synced.error, synced.assignment) == (0, b"mine")
    assert state(coordinator) is GroupState.STABLE
    assert coordinator.heartbeat(GROUP, 1, result.member_id) == 0


def test_three_members_join_sync_and_get_their_own_assignment(
    scheduler: FakeScheduler, store: MemoryStore
) -> None:
    coordinator = make_coordinator(scheduler, store, group_initial_rebalance_delay_ms=3000)
    pending = [join(coordinator, client_id=f"c{i}") for i in range(3)]
    scheduler.advance(3000)  # members arrived during the initial delay: it is extended once
    assert all(answers == [] for answers in pending)
    scheduler.advance(3000)
    results = [answers[0] for answers in pending]
    leader = results[0]
    assert {r.generation_id for r in results} == {1}
    assert {r.leader_id for r in results} == {leader.member_id}
    assert sorted(m.member_id for m in leader.members) == sorted(r.member_id for r in results)
    assert results[1].members == [] and results[2].members == []

    follower_syncs = [sync(coordinator, r.member_id, 1) for r in results[1:]]
    assert follower_syncs == [[], []]  # parked until the leader's assignment arrives
    assignment = {r.member_id: f"part-{i}".encode() for i, r in enumerate(results[:2])}
    [leader_sync] = sync(coordinator, leader.member_id, 1, assignment)
    assert leader_sync.assignment == b"part-0"
    assert follower_syncs[0][0].assignment == b"part-1"
    # The leader left the third member out: it gets empty bytes, not an error.
    assert (follower_syncs[1][0].error, follower_syncs[1][0].assignment) == (0, b"")
    assert state(coordinator) is GroupState.STABLE
    [(_, _, record)] = store.groups
    assert record.generation_id == 1 and len(record.members) == 3


def test_two_step_join_hands_out_a_member_id_first(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    [first] = join(coordinator, client_id="rdkafka", require_known=True)
    assert first.error == codes.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("rdkafka-")
    second = join(coordinator, first.member_id, require_known=True)
    scheduler.advance(0)
    assert second[0].error == 0
    assert second[0].member_id == first.member_id


def test_made_up_member_id_is_unknown(coordinator: GroupCoordinator) -> None:
    [ignored] = join(coordinator, require_known=True)
    assert ignored.error == codes.MEMBER_ID_REQUIRED
    [answer] = join(coordinator, "made-up-id")
    assert answer.error == codes.UNKNOWN_MEMBER_ID


def test_pending_member_expires_after_its_session_timeout(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    [first] = join(coordinator, require_known=True, session_ms=6000)
    scheduler.advance(6000)
    [late] = join(coordinator, first.member_id, require_known=True)
    assert late.error == codes.UNKNOWN_MEMBER_ID


def test_rebalance_waits_for_pending_members(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, _ = stable_group(coordinator, scheduler, 1)
    [newcomer] = join(coordinator, require_known=True)
    rejoin = join(coordinator, members[0])
    scheduler.advance(0)
    assert rejoin == []  # the pending newcomer is expected to come back with its id
    joined = join(coordinator, newcomer.member_id, require_known=True)
    assert rejoin[0].generation_id == joined[0].generation_id == 2
    assert len(rejoin[0].members) == 2


def test_protocol_vote_most_votes_wins(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    a = join(coordinator, protocols=[("range", b"a"), ("roundrobin", b"a")])
    b = join(coordinator, protocols=[("roundrobin", b"b"), ("range", b"b")])
    c = join(coordinator, protocols=[("roundrobin", b"c"), ("range", b"c"), ("sticky", b"c")])
    scheduler.advance(0)
    assert {x[0].protocol_name for x in (a, b, c)} == {"roundrobin"}
    leader = a[0]
    assert sorted(m.metadata for m in leader.members) == [b"a", b"b", b"c"]


def test_protocol_vote_tie_follows_the_leaders_preference(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    a = join(coordinator, protocols=[("roundrobin", b"a"), ("range", b"a")])
    join(coordinator, protocols=[("range", b"b"), ("roundrobin", b"b")])
    scheduler.advance(0)
    assert a[0].leader_id == a[0].member_id
    assert a[0].protocol_name == "roundrobin"


def test_only_common_protocols_are_candidates(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    a = join(coordinator, protocols=[("sticky", b"a"), ("range", b"a")])
    join(coordinator, protocols=[("range", b"b")])
    join(coordinator, protocols=[("range", b"c")])
    scheduler.advance(0)
    assert a[0].protocol_name == "range"


def test_generation_increments_and_leader_keeps_its_role(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2)
    leader, follower = members
    # A leader rejoin (e.g. it saw new topics) always triggers a rebalance.
    leader_join = join(coordinator, leader)
    assert state(coordinator) is GroupState.PREPARING_REBALANCE
    assert coordinator.heartbeat(GROUP, generation, follower) == codes.REBALANCE_IN_PROGRESS
    follower_join = join(coordinator, follower)
    assert leader_join[0].generation_id == follower_join[0].generation_id == generation + 1
    assert follower_join[0].leader_id == leader


def test_leader_leaving_hands_leadership_on(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 3)
    result = coordinator.leave_group(GROUP, [LeavingMember(members[0])])
    assert (result.error, result.member_errors) == (0, [0])
    rejoins = [join(coordinator, m) for m in members[1:]]
    assert {r[0].leader_id for r in rejoins} == {members[1]}
    assert {r[0].generation_id for r in rejoins} == {generation + 1}
    assert len(rejoins[0][0].members) == 2 and rejoins[1][0].members == []


def test_stable_follower_rejoining_unchanged_gets_the_current_generation(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2)
    [again] = join(coordinator, members[1])
    assert (again.error, again.generation_id, again.members) == (0, generation, [])
    assert state(coordinator) is GroupState.STABLE


def test_changed_metadata_triggers_a_rebalance(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, _ = stable_group(coordinator, scheduler, 2)
    assert join(coordinator, members[1], protocols=[("range", b"new-topics")]) == []
    assert state(coordinator) is GroupState.PREPARING_REBALANCE


def test_session_timeout_expels_a_silent_member(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2, session_ms=10_000)
    alive, silent = members
    for _ in range(3):
        scheduler.advance(3000)
        assert coordinator.heartbeat(GROUP, generation, alive) == 0
    scheduler.advance(1000)  # 10 s since the silent member's last sync
    assert coordinator.heartbeat(GROUP, generation, alive) == codes.REBALANCE_IN_PROGRESS
    assert coordinator.heartbeat(GROUP, generation, silent) == codes.UNKNOWN_MEMBER_ID
    [rejoined] = join(coordinator, alive)
    assert rejoined.generation_id == generation + 1
    assert [m.member_id for m in rejoined.members] == [alive]


def test_heartbeats_keep_a_member_alive_indefinitely(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 1, session_ms=6000)
    for _ in range(20):
        scheduler.advance(5000)
        assert coordinator.heartbeat(GROUP, generation, members[0]) == 0


def test_rebalance_timeout_removes_members_that_do_not_rejoin(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(
        coordinator, scheduler, 2, session_ms=10_000, rebalance_ms=20_000
    )
    leader, laggard = members
    leader_join = join(coordinator, leader, session_ms=10_000, rebalance_ms=20_000)
    for _ in range(6):  # the laggard heartbeats but never rejoins
        scheduler.advance(3000)
        assert coordinator.heartbeat(GROUP, generation, laggard) == codes.REBALANCE_IN_PROGRESS
    assert leader_join == []
    scheduler.advance(2000)  # 20 s after the rebalance began
    assert leader_join[0].generation_id == generation + 1
    assert [m.member_id for m in leader_join[0].members] == [leader]
    assert coordinator.heartbeat(GROUP, generation, laggard) == codes.UNKNOWN_MEMBER_ID


def test_leader_that_does_not_rejoin_is_replaced(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2, rebalance_ms=20_000)
    old_leader, follower = members
    follower_join = join(coordinator, follower, protocols=[("range", b"new")], rebalance_ms=20_000)
    for _ in range(4):  # the old leader stays alive but never rejoins
        scheduler.advance(5000)
        assert coordinator.heartbeat(GROUP, generation, old_leader) in (
            codes.REBALANCE_IN_PROGRESS,
            codes.UNKNOWN_MEMBER_ID,
        )
    assert follower_join[0].leader_id == follower
    assert [m.member_id for m in follower_join[0].members] == [follower]
    assert coordinator.heartbeat(GROUP, generation, old_leader) == codes.UNKNOWN_MEMBER_ID


def test_initial_delay_is_extended_while_members_keep_arriving(
    scheduler: FakeScheduler, store: MemoryStore
) -> None:
    coordinator = make_coordinator(scheduler, store, group_initial_rebalance_delay_ms=3000)
    first = join(coordinator)
    scheduler.advance(2000)
    second = join(coordinator)
    scheduler.advance(1000)  # the first delay is over, but a member arrived during it
    assert first == [] and second == []
    scheduler.advance(3000)
    assert first[0].generation_id == second[0].generation_id == 1
    assert len(first[0].members) == 2


def test_initial_delay_extension_is_capped_by_the_rebalance_timeout(
    scheduler: FakeScheduler, store: MemoryStore
) -> None:
    coordinator = make_coordinator(scheduler, store, group_initial_rebalance_delay_ms=3000)
    first = join(coordinator, rebalance_ms=4000)
    scheduler.advance(1000)
    join(coordinator, rebalance_ms=4000)
    scheduler.advance(2999)
    assert first == []
    scheduler.advance(1)  # 3000 + min(3000, 4000 - 3000)
    assert first[0].error == 0


def test_new_member_while_stable_rebalances_everyone(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2)
    newcomer = join(coordinator)
    assert coordinator.heartbeat(GROUP, generation, members[0]) == codes.REBALANCE_IN_PROGRESS
    joins = [join(coordinator, m) for m in members]
    assert newcomer[0].generation_id == generation + 1
    assert len(joins[0][0].members) == 3


def test_follower_parked_in_sync_is_told_to_rejoin_when_a_member_joins(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    a = join(coordinator)
    b = join(coordinator)
    scheduler.advance(0)
    parked = sync(coordinator, b[0].member_id, 1)
    join(coordinator)  # a third member arrives before the leader synced
    assert parked[0].error == codes.REBALANCE_IN_PROGRESS
    [late_leader_sync] = sync(coordinator, a[0].member_id, 1, {})
    assert late_leader_sync.error == codes.REBALANCE_IN_PROGRESS


def test_member_that_never_syncs_is_expelled(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    a = join(coordinator, session_ms=6000)
    b = join(coordinator, session_ms=6000)
    scheduler.advance(0)
    leader_sync = sync(coordinator, a[0].member_id, 1, {})
    assert leader_sync[0].error == 0
    scheduler.advance(5000)
    assert coordinator.heartbeat(GROUP, 1, a[0].member_id) == 0
    scheduler.advance(1000)
    assert coordinator.heartbeat(GROUP, 1, b[0].member_id) == codes.UNKNOWN_MEMBER_ID


def test_last_member_leaving_empties_the_group_and_persists_it(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    members, generation = stable_group(coordinator, scheduler, 1)
    assert coordinator.leave_group(GROUP, [LeavingMember(m) for m in members]).member_errors == [0]
    assert state(coordinator) is GroupState.EMPTY
    group = coordinator.group(GROUP)
    assert group is not None and group.generation_id == generation + 1
    _, _, record = store.groups[-1]
    assert (record.generation_id, record.members, record.protocol_name) == (
        generation + 1,
        [],
        None,
    )


def test_batched_leave_reports_each_member(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, _ = stable_group(coordinator, scheduler, 2)
    [pending] = join(coordinator, require_known=True)
    result = coordinator.leave_group(
        GROUP, [LeavingMember(m) for m in (members[1], "nobody", pending.member_id)]
    )
    assert result.member_errors == [0, codes.UNKNOWN_MEMBER_ID, 0]
    unknown_group = coordinator.leave_group("no-such-group", [LeavingMember("x")])
    assert unknown_group.member_errors == [codes.UNKNOWN_MEMBER_ID]


def test_parked_join_of_a_leaving_member_is_answered(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, _ = stable_group(coordinator, scheduler, 2)
    parked = join(coordinator, members[0])
    coordinator.leave_group(GROUP, [LeavingMember(members[0])])
    assert parked[0].error == codes.UNKNOWN_MEMBER_ID
