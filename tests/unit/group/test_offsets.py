"""OffsetCommit fencing rules and OffsetFetch, on a fake clock."""

import pytest

from kafkalite.protocol.errors import KafkaStorageError, MessageTooLargeError
from kafkalite_server.group import GroupCoordinator, LeavingMember
from kafkalite_server.group import error_codes as codes
from kafkalite_server.group.offsets import OffsetCommitEntry

from .fakes import GROUP, TP0, TP1, FakeScheduler, MemoryStore, commit, join, stable_group, sync


def test_member_of_the_current_generation_commits(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2)
    assert commit(coordinator, members[1], generation, 42, metadata="checkpoint") == 0
    fetched = coordinator.fetch_offsets(GROUP, [TP0, TP1])
    assert fetched.error == 0
    committed = fetched.offsets[TP0]
    assert committed is not None
    assert (committed.offset, committed.leader_epoch, committed.metadata) == (42, 3, "checkpoint")
    assert committed.commit_timestamp_ms == scheduler.now
    assert fetched.offsets[TP1] is None  # never committed: the handler answers -1
    [(partition, group_id, written)] = store.offsets
    assert (partition, group_id) == (coordinator.partition_for(GROUP), GROUP)
    assert written[TP0].offset == 42


def test_stale_generation_is_fenced(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2)
    assert commit(coordinator, members[0], generation - 1) == codes.ILLEGAL_GENERATION
    assert commit(coordinator, members[0], generation + 1) == codes.ILLEGAL_GENERATION


def test_zombie_of_an_old_generation_cannot_overwrite(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2, session_ms=6000)
    zombie = members[1]
    scheduler.advance(6000)  # the zombie stops heartbeating and is expelled
    assert commit(coordinator, zombie, generation) == codes.UNKNOWN_MEMBER_ID


def test_unknown_member_is_rejected(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    _, generation = stable_group(coordinator, scheduler, 1)
    assert commit(coordinator, "stranger", generation) == codes.UNKNOWN_MEMBER_ID


def test_anonymous_commit_to_a_group_with_members_is_rejected(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    stable_group(coordinator, scheduler, 1)
    assert commit(coordinator, "", -1) == codes.UNKNOWN_MEMBER_ID


def test_anonymous_commit_creates_a_standalone_group(coordinator: GroupCoordinator) -> None:
    assert commit(coordinator, "", -1, 7, group="standalone") == 0
    fetched = coordinator.fetch_offsets("standalone", None)
    assert {tp: o.offset for tp, o in fetched.offsets.items() if o} == {TP0: 7}
    assert commit(coordinator, "", -1, 8, group="standalone") == 0  # Empty: still accepted


def test_anonymous_commit_to_an_emptied_group_is_accepted(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, _ = stable_group(coordinator, scheduler, 1)
    coordinator.leave_group(GROUP, [LeavingMember(m) for m in members])
    assert commit(coordinator, "", -1, 99) == 0


def test_a_simple_commit_with_a_client_made_member_id_is_accepted_by_an_empty_group(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    """librdkafka with group.protocol=consumer makes its member id itself (KIP-1082) and
    sends it, at generation -1, with a commit from a consumer that never subscribed."""
    assert commit(coordinator, "client-made-id", -1, 5, group="standalone") == 0
    members, _ = stable_group(coordinator, scheduler, 1)
    assert commit(coordinator, "client-made-id", -1) == codes.UNKNOWN_MEMBER_ID
    coordinator.leave_group(GROUP, [LeavingMember(m) for m in members])
    assert commit(coordinator, "client-made-id", -1, 99) == 0


def test_unknown_group_with_a_generation_is_an_illegal_generation(
    coordinator: GroupCoordinator,
) -> None:
    assert commit(coordinator, "m", 3, group="gone") == codes.ILLEGAL_GENERATION
    assert coordinator.group("gone") is None


def test_commit_during_completing_rebalance_is_refused(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    answers = join(coordinator)
    scheduler.advance(0)
    assert commit(coordinator, answers[0].member_id, 1) == codes.REBALANCE_IN_PROGRESS


def test_commit_during_preparing_rebalance_from_current_generation_is_accepted(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 2)
    join(coordinator)  # a newcomer starts a rebalance
    assert commit(coordinator, members[1], generation) == 0


def test_commit_counts_as_a_heartbeat(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 1, session_ms=6000)
    for _ in range(4):
        scheduler.advance(5000)
        assert commit(coordinator, members[0], generation) == 0


def test_oversized_metadata_fails_only_that_partition(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 1)
    results = coordinator.commit_offsets(
        GROUP,
        generation,
        members[0],
        {TP0: OffsetCommitEntry(1, -1, "x" * 4097), TP1: OffsetCommitEntry(2, -1, "x" * 4096)},
    )
    assert results == {TP0: codes.OFFSET_METADATA_TOO_LARGE, TP1: 0}
    assert coordinator.fetch_offsets(GROUP, [TP0]).offsets[TP0] is None


def test_null_metadata_is_stored_as_empty(coordinator: GroupCoordinator) -> None:
    assert commit(coordinator, "", -1, group="g", metadata=None) == 0
    committed = coordinator.fetch_offsets("g", [TP0]).offsets[TP0]
    assert committed is not None and committed.metadata == ""


def test_explicit_retention_sets_an_expiry(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    coordinator.commit_offsets("g", -1, "", {TP0: OffsetCommitEntry(1)}, retention_ms=60_000)
    coordinator.commit_offsets("g", -1, "", {TP1: OffsetCommitEntry(1)})
    offsets = coordinator.fetch_offsets("g", None).offsets
    assert offsets[TP0].expire_timestamp_ms == scheduler.now + 60_000  # type: ignore[union-attr]
    assert offsets[TP1].expire_timestamp_ms is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (KafkaStorageError("disk"), codes.NOT_COORDINATOR),
        (MessageTooLargeError("big"), codes.INVALID_COMMIT_OFFSET_SIZE),
        (OSError("EIO"), codes.NOT_COORDINATOR),
    ],
)
def test_failed_write_is_reported_and_not_applied(
    coordinator: GroupCoordinator, store: MemoryStore, failure: Exception, expected: int
) -> None:
    store.fail_with = failure
    assert commit(coordinator, "", -1, group="g") == expected
    store.fail_with = None
    assert coordinator.fetch_offsets("g", [TP0]).offsets[TP0] is None
    assert commit(coordinator, "", -1, group="g") == 0


def test_fetch_all_of_an_unknown_group_is_empty(coordinator: GroupCoordinator) -> None:
    assert coordinator.fetch_offsets("nobody", None).offsets == {}
    assert coordinator.fetch_offsets("nobody", [TP0]).offsets == {TP0: None}


def test_sync_after_commit_keeps_offsets(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    members, generation = stable_group(coordinator, scheduler, 1)
    assert commit(coordinator, members[0], generation, 5) == 0
    join(coordinator, members[0])
    scheduler.advance(0)
    sync(coordinator, members[0], generation + 1, {})
    assert coordinator.fetch_offsets(GROUP, [TP0]).offsets[TP0].offset == 5  # type: ignore[union-attr]
