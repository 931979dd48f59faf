"""Describe/List/Delete, partition loading, and bad input that must leave the group usable."""


from kafkalite.protocol.errors import KafkaStorageError, MessageTooLargeError
from kafkalite_server.group import (
    GroupCoordinator,
    GroupState,
    LeavingMember,
)
from kafkalite_server.group import error_codes as codes
from kafkalite_server.group.offsets import OffsetAndMetadata
from kafkalite_server.group.store import GroupMetadataRecord, LoadedGroup

from .fakes import (
    GROUP,
    TP0,
    FakeScheduler,
    MemoryStore,
    commit,
    join,
    make_coordinator,
    stable_group,
    sync,
    unload,
)


def test_describe_stable_group(coordinator: GroupCoordinator, scheduler: FakeScheduler) -> None:
    members, _ = stable_group(coordinator, scheduler, 2)
    [description] = coordinator.describe_groups([GROUP])
    assert (description.error, description.state) == (0, "Stable")
    assert (description.protocol_type, description.protocol) == ("consumer", "range")
    by_id = {m.member_id: m for m in description.members}
    assert set(by_id) == set(members)
    assert by_id[members[1]].metadata == b"range-meta"
    assert by_id[members[1]].assignment == members[1].encode()
    assert by_id[members[1]].client_id == "c1"


def test_describe_rebalancing_group_hides_metadata(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    join(coordinator)
    [description] = coordinator.describe_groups([GROUP])
    assert (description.state, description.protocol) == ("PreparingRebalance", "")
    assert description.members[0].metadata == b""
    scheduler.advance(0)
    assert coordinator.describe_groups([GROUP])[0].state == "CompletingRebalance"


def test_describe_unknown_group_is_dead(coordinator: GroupCoordinator) -> None:
    [description] = coordinator.describe_groups(["nobody"])
    assert (description.error, description.state, description.members) == (0, "Dead", [])


def test_list_groups(coordinator: GroupCoordinator, scheduler: FakeScheduler) -> None:
    stable_group(coordinator, scheduler, 1)
    commit(coordinator, "", -1, group="standalone")
    error, listings = coordinator.list_groups()
    assert error == 0
    assert sorted((g.group_id, g.protocol_type, g.state) for g in listings) == [
        (GROUP, "consumer", "Stable"),
        ("standalone", "", "Empty"),
    ]


def test_delete_only_empty_groups(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    stable_group(coordinator, scheduler, 1)
    commit(coordinator, "", -1, group="idle")
    results = coordinator.delete_groups([GROUP, "idle", "nobody"])
    assert results == {GROUP: codes.NON_EMPTY_GROUP, "idle": 0, "nobody": codes.GROUP_ID_NOT_FOUND}
    assert store.deleted == [(coordinator.partition_for("idle"), "idle", [TP0])]
    assert coordinator.fetch_offsets("idle", None).offsets == {}
    assert coordinator.describe_groups(["idle"])[0].state == "Dead"


def test_delete_failure_keeps_the_group(coordinator: GroupCoordinator, store: MemoryStore) -> None:
    commit(coordinator, "", -1, group="idle")
    store.fail_with = KafkaStorageError("disk")
    assert coordinator.delete_groups(["idle"]) == {"idle": codes.NOT_COORDINATOR}
    assert coordinator.fetch_offsets("idle", [TP0]).offsets[TP0] is not None


def test_groups_reload_empty_with_offsets_and_generation(
    scheduler: FakeScheduler, store: MemoryStore
) -> None:
    coordinator = make_coordinator(scheduler, store)
    partition = coordinator.partition_for(GROUP)
    unload(coordinator, partition)
    coordinator.ownership.begin_loading(partition, 0)
    assert commit(coordinator, "", -1) == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert join(coordinator)[0].error == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert coordinator.fetch_offsets(GROUP, None).error == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert coordinator.describe_groups([GROUP])[0].error == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert coordinator.list_groups()[0] == codes.COORDINATOR_LOAD_IN_PROGRESS
    assert sync(coordinator, "m", 4)[0].error == codes.REBALANCE_IN_PROGRESS
    record = GroupMetadataRecord("consumer", 4, "range", "m", 0, [])
    loaded = LoadedGroup(GROUP, record, {TP0: OffsetAndMetadata(17, -1, "meta", 1)})
    coordinator.ownership.complete_loading(partition)
    coordinator.install(partition, [loaded])

    group = coordinator.group(GROUP)
    assert group is not None
    assert (group.state, group.generation_id, group.protocol_type) == (
        GroupState.EMPTY,
        4,
        "consumer",
    )
    assert coordinator.fetch_offsets(GROUP, [TP0]).offsets[TP0].offset == 17  # type: ignore[union-attr]
    assert coordinator.heartbeat(GROUP, 4, "m") == codes.UNKNOWN_MEMBER_ID
    answers = join(coordinator)
    scheduler.advance(0)
    assert answers[0].generation_id == 5


def test_partition_not_owned_answers_not_coordinator(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    parked = join(coordinator)
    unload(coordinator, coordinator.partition_for(GROUP))
    assert parked[0].error == codes.NOT_COORDINATOR
    assert coordinator.group(GROUP) is None
    assert join(coordinator)[0].error == codes.NOT_COORDINATOR
    assert coordinator.heartbeat(GROUP, 1, "m") == codes.NOT_COORDINATOR
    assert commit(coordinator, "", -1) == codes.NOT_COORDINATOR
    scheduler.advance(10_000_000)  # timers of the dropped group must not fire into it


def test_session_timeout_must_be_within_broker_limits(coordinator: GroupCoordinator) -> None:
    assert join(coordinator, session_ms=5999)[0].error == codes.INVALID_SESSION_TIMEOUT
    assert join(coordinator, session_ms=1_800_001)[0].error == codes.INVALID_SESSION_TIMEOUT
    assert coordinator.group(GROUP) is None


def test_empty_group_id_is_invalid(coordinator: GroupCoordinator) -> None:
    assert join(coordinator, group="")[0].error == codes.INVALID_GROUP_ID
    assert coordinator.heartbeat("", 1, "m") == codes.INVALID_GROUP_ID
    assert sync(coordinator, "m", 1, group="")[0].error == codes.INVALID_GROUP_ID
    assert coordinator.leave_group("", [LeavingMember("m")]).error == codes.INVALID_GROUP_ID


def test_empty_protocol_list_or_type_is_inconsistent(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    assert join(coordinator, protocols=[])[0].error == codes.INCONSISTENT_GROUP_PROTOCOL
    assert join(coordinator, protocol_type="")[0].error == codes.INCONSISTENT_GROUP_PROTOCOL
    assert coordinator.group(GROUP) is None
    stable_group(coordinator, scheduler, 1)
    assert join(coordinator, protocols=[])[0].error == codes.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_type_or_protocols_not_matching_the_group(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 1)
    assert join(coordinator, protocol_type="connect")[0].error == codes.INCONSISTENT_GROUP_PROTOCOL
    assert (
        join(coordinator, protocols=[("sticky", b"")])[0].error == codes.INCONSISTENT_GROUP_PROTOCOL
    )
    assert coordinator.heartbeat(GROUP, generation, members[0]) == 0  # no rebalance started


def test_huge_metadata_blob_is_accepted_and_the_group_works(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    blob = b"\x00" * (8 * 1024 * 1024)
    answers = join(coordinator, protocols=[("range", blob)])
    scheduler.advance(0)
    assert answers[0].members[0].metadata == blob
    assert sync(coordinator, answers[0].member_id, 1, {})[0].error == 0


def test_sync_errors_leave_the_group_usable(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2)
    assert sync(coordinator, "intruder", generation)[0].error == codes.UNKNOWN_MEMBER_ID
    assert sync(coordinator, members[1], generation + 7)[0].error == codes.ILLEGAL_GENERATION
    assert sync(coordinator, "x", 1, group="no-such")[0].error == codes.UNKNOWN_MEMBER_ID
    [again] = sync(coordinator, members[1], generation)
    assert (again.error, again.assignment) == (0, members[1].encode())
    join(coordinator, members[0])
    assert sync(coordinator, members[1], generation)[0].error == codes.REBALANCE_IN_PROGRESS


def test_heartbeat_errors(coordinator: GroupCoordinator, scheduler: FakeScheduler) -> None:
    members, generation = stable_group(coordinator, scheduler, 1)
    assert coordinator.heartbeat(GROUP, generation - 1, members[0]) == codes.ILLEGAL_GENERATION
    assert coordinator.heartbeat(GROUP, generation, "stranger") == codes.UNKNOWN_MEMBER_ID
    assert coordinator.heartbeat("no-such", 1, "m") == codes.UNKNOWN_MEMBER_ID


def test_failed_assignment_write_sends_members_back_to_rejoin(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    a = join(coordinator)
    b = join(coordinator)
    scheduler.advance(0)
    follower = sync(coordinator, b[0].member_id, 1)
    store.fail_with = KafkaStorageError("disk")
    leader = sync(coordinator, a[0].member_id, 1, {})
    assert leader[0].error == follower[0].error == codes.NOT_COORDINATOR
    store.fail_with = None
    assert coordinator.describe_groups([GROUP])[0].state == "PreparingRebalance"
    rejoins = [join(coordinator, x[0].member_id) for x in (a, b)]
    assert {r[0].generation_id for r in rejoins} == {2}


def test_oversized_group_metadata_is_a_server_error_and_members_rejoin(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    answers = join(coordinator)
    scheduler.advance(0)
    store.fail_with = MessageTooLargeError("group metadata over max.message.bytes")
    [synced] = sync(coordinator, answers[0].member_id, 1, {})
    assert synced.error == codes.UNKNOWN_SERVER_ERROR
    store.fail_with = None
    rejoin = join(coordinator, answers[0].member_id)
    scheduler.advance(0)
    assert sync(coordinator, answers[0].member_id, rejoin[0].generation_id, {})[0].error == 0
