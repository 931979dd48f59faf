"""Offset retention (offsets.retention.minutes, Kafka 2.1+ rules) with a fake clock: what
expires when, what is tombstoned, and what is never touched."""

from __future__ import annotations

import logging

import pytest

from kafkalite.errors import ConfigError
from kafkalite.protocol.consumer_protocol import ConsumerProtocolSubscription
from kafkalite.protocol.errors import NotLeaderOrFollowerError
from kafkalite_server.config import BrokerConfig
from kafkalite_server.group import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kafkalite_server.group import error_codes as codes
from kafkalite_server.group.coordinator import LeavingMember
from kafkalite_server.group.offsets import OffsetAndMetadata, OffsetCommitEntry, TopicPartition
from kafkalite_server.group.store import GroupMetadataRecord, LoadedGroup, MemberRecord

from .fakes import (
    GROUP,
    TP0,
    TP1,
    FakeScheduler,
    MemoryStore,
    load,
    make_coordinator,
    own_every_partition,
    stable_group,
)

RETENTION_MS = 60_000
CHECK_MS = 1_000
OTHER = TopicPartition("other", 0)
LOST_MEMBER = MemberRecord("m", None, "c", "/127.0.0.1", 30_000, 10_000, b"", b"")


@pytest.fixture
def coordinator(scheduler: FakeScheduler, store: MemoryStore) -> GroupCoordinator:
    return make_coordinator(scheduler, store, offsets_retention_minutes=1,
                            offsets_retention_check_interval_ms=CHECK_MS)


def subscribing_to(*topics: str) -> list[tuple[str, bytes]]:
    return [("range", ConsumerProtocolSubscription(list(topics)).encode(1))]


def commit_simple(coordinator: GroupCoordinator, *partitions: TopicPartition,
                  retention_ms: int = -1) -> None:
    """A commit with no member (generation -1), as a standalone consumer or an admin does."""
    results = coordinator.commit_offsets(GROUP, -1, "", {tp: OffsetCommitEntry(5)
                                                         for tp in partitions},
                                         retention_ms=retention_ms)
    assert set(results.values()) == {codes.NONE}


def committed(coordinator: GroupCoordinator) -> set[TopicPartition]:
    return set(coordinator.fetch_offsets(GROUP, None).offsets)


def keep_alive(coordinator: GroupCoordinator, scheduler: FakeScheduler, members: list[str],
               generation: int, ms: int) -> None:
    """Let ``ms`` pass with every member heartbeating, so the group stays Stable."""
    for _ in range(ms // 5_000):
        scheduler.advance(5_000)
        for member in members:
            assert coordinator.heartbeat(GROUP, generation, member) == codes.NONE


def test_retention_of_an_empty_group_counts_from_when_its_last_member_left(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    members, generation = stable_group(coordinator, scheduler, 1,
                                       protocols=subscribing_to("t"))
    results = coordinator.commit_offsets(GROUP, generation, members[0],
                                         {TP0: OffsetCommitEntry(7), TP1: OffsetCommitEntry(8)})
    assert set(results.values()) == {codes.NONE}
    # The commit is older than the retention by the time the member leaves: kept anyway.
    keep_alive(coordinator, scheduler, members, generation, 2 * RETENTION_MS)
    assert committed(coordinator) == {TP0, TP1}
    assert coordinator.leave_group(GROUP, [LeavingMember(members[0])]).member_errors == [codes.NONE]
    assert coordinator.group(GROUP).state is GroupState.EMPTY

    scheduler.advance(RETENTION_MS - CHECK_MS)
    assert committed(coordinator) == {TP0, TP1}
    assert store.deleted == []

    scheduler.advance(2 * CHECK_MS)
    # Offsets and the group's own record are tombstoned in one batch; the group is gone.
    assert store.deleted == [(coordinator.partition_for(GROUP), GROUP, [TP0, TP1])]
    assert coordinator.group(GROUP) is None
    assert coordinator.fetch_offsets(GROUP, None).offsets == {}


def test_a_returning_member_stops_the_clock(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    commit_simple(coordinator, TP0)
    members, generation = stable_group(coordinator, scheduler, 1,
                                       protocols=subscribing_to("t"))
    keep_alive(coordinator, scheduler, members, generation, 3 * RETENTION_MS)
    assert committed(coordinator) == {TP0}  # a subscribed topic never expires while Stable
    assert store.deleted == store.deleted_offsets == []


def test_a_stable_group_loses_only_offsets_of_topics_nobody_subscribes_to(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    commit_simple(coordinator, TP0, OTHER)
    members, generation = stable_group(coordinator, scheduler, 2,
                                       protocols=subscribing_to("t"))
    keep_alive(coordinator, scheduler, members, generation, RETENTION_MS + CHECK_MS)
    assert committed(coordinator) == {TP0}
    assert store.deleted_offsets == [(coordinator.partition_for(GROUP), GROUP, [OTHER])]
    assert coordinator.group(GROUP).state is GroupState.STABLE


def test_standalone_commits_expire_one_by_one_from_their_commit(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    commit_simple(coordinator, TP0)
    scheduler.advance(30_000)
    commit_simple(coordinator, TP1)
    scheduler.advance(RETENTION_MS - 30_000 + CHECK_MS)
    assert committed(coordinator) == {TP1}
    assert store.deleted_offsets == [(coordinator.partition_for(GROUP), GROUP, [TP0])]
    scheduler.advance(30_000)
    assert coordinator.group(GROUP) is None
    assert store.deleted == [(coordinator.partition_for(GROUP), GROUP, [TP1])]


def test_an_explicit_retention_of_a_v1_commit_wins(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    commit_simple(coordinator, TP0, retention_ms=10_000)
    commit_simple(coordinator, TP1)
    scheduler.advance(10_000 + CHECK_MS)
    assert committed(coordinator) == {TP1}


def test_a_rebalancing_group_keeps_everything(
    coordinator: GroupCoordinator, scheduler: FakeScheduler
) -> None:
    commit_simple(coordinator, OTHER)
    members, generation = stable_group(coordinator, scheduler, 1, protocols=[("range", b"")])
    # Unreadable subscriptions: nothing is known to be unused, so nothing expires.
    keep_alive(coordinator, scheduler, members, generation, 2 * RETENTION_MS)
    assert committed(coordinator) == {OTHER}


def test_a_failed_tombstone_write_keeps_the_offsets_for_the_next_pass(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    commit_simple(coordinator, TP0)
    store.fail_with = NotLeaderOrFollowerError("moved")
    scheduler.advance(RETENTION_MS + CHECK_MS)
    assert committed(coordinator) == {TP0}
    store.fail_with = None
    scheduler.advance(CHECK_MS)
    assert coordinator.group(GROUP) is None


def test_an_empty_group_without_offsets_is_deleted_at_the_next_pass(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore
) -> None:
    members, _ = stable_group(coordinator, scheduler, 1)
    coordinator.leave_group(GROUP, [LeavingMember(members[0])])
    scheduler.advance(CHECK_MS)
    assert coordinator.group(GROUP) is None
    assert store.deleted == [(coordinator.partition_for(GROUP), GROUP, [])]


def test_only_a_pass_that_expires_something_logs_at_info(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    members, _ = stable_group(coordinator, scheduler, 1)
    coordinator.leave_group(GROUP, [LeavingMember(members[0])])
    caplog.set_level(logging.INFO, logger="kafkalite_server.group.coordinator")
    scheduler.advance(CHECK_MS)  # deletes the empty group, which had no offsets: quiet
    assert coordinator.group(GROUP) is None
    assert not [r for r in caplog.records if "offsets expired" in r.getMessage()]
    commit_simple(coordinator, OTHER)
    scheduler.advance(RETENTION_MS + CHECK_MS)
    assert [r.getMessage() for r in caplog.records if "offsets expired" in r.getMessage()] == [
        f"group {GROUP}: 1 offsets expired"]


def test_a_reloaded_group_counts_from_when_it_was_stored_empty(
    scheduler: FakeScheduler, store: MemoryStore
) -> None:
    coordinator = GroupCoordinator(
        GroupCoordinatorConfig(offsets_retention_minutes=1,
                               offsets_retention_check_interval_ms=CHECK_MS),
        scheduler, store)
    now = scheduler.now_ms()
    long_ago = OffsetAndMetadata(3, commit_timestamp_ms=now - 10 * RETENTION_MS)
    emptied = GroupMetadataRecord("consumer", 4, None, None, now - 50_000)
    with_members = GroupMetadataRecord("consumer", 2, "range", "m", now - 10 * RETENTION_MS,
                                       members=[LOST_MEMBER])
    for loaded in (LoadedGroup(GROUP, emptied, {TP0: long_ago}),
                   LoadedGroup("stored-with-members", with_members, {TP0: long_ago})):
        load(coordinator, coordinator.partition_for(loaded.group_id), [loaded])
    assert coordinator.group(GROUP).state_timestamp_ms == now - 50_000

    scheduler.advance(5_000)
    assert committed(coordinator) == {TP0}
    scheduler.advance(10_000)
    assert coordinator.group(GROUP) is None
    # Its members were lost in the restart: the group counts as Empty from the load.
    assert coordinator.group("stored-with-members") is not None


def test_defaults_and_bad_settings_name_the_key() -> None:
    config = GroupCoordinatorConfig()
    assert config.offsets_retention_ms == 7 * 24 * 3600 * 1000
    assert config.offsets_retention_check_interval_ms == 600_000
    broker = BrokerConfig.from_properties({"offsets.retention.minutes": "5",
                                           "offsets.retention.check.interval.ms": "100"})
    assert GroupCoordinatorConfig.from_broker_config(broker).offsets_retention_ms == 300_000
    with pytest.raises(ConfigError, match=r"offsets\.retention\.minutes"):
        BrokerConfig.from_properties({"offsets.retention.minutes": "0"})
    with pytest.raises(ConfigError, match=r"offsets\.retention\.check\.interval\.ms"):
        GroupCoordinatorConfig(offsets_retention_check_interval_ms=0).validate()


# -- offsets committed in a transaction that has not ended (TxnOffsetCommit) ----------------


class PendingOffsets:
    """What the broker's TransactionalOffsets reports: per group, partitions whose offset
    waits for its transaction's marker."""

    def __init__(self) -> None:
        self.by_group: dict[str, set[TopicPartition]] = {}

    def __call__(self) -> dict[str, set[TopicPartition]]:
        return self.by_group


@pytest.fixture
def pending() -> PendingOffsets:
    return PendingOffsets()


@pytest.fixture
def txn_aware(scheduler: FakeScheduler, store: MemoryStore,
              pending: PendingOffsets) -> GroupCoordinator:
    coordinator = GroupCoordinator(
        GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, offsets_retention_minutes=1,
                               offsets_retention_check_interval_ms=CHECK_MS),
        scheduler, store, pending_transactional_offsets=pending)
    own_every_partition(coordinator)
    return coordinator


def test_an_offset_with_a_pending_transactional_commit_does_not_expire(
    txn_aware: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore,
    pending: PendingOffsets
) -> None:
    commit_simple(txn_aware, TP0, TP1)
    pending.by_group[GROUP] = {TP0}
    scheduler.advance(RETENTION_MS + CHECK_MS)
    # TP1 goes; TP0 stays while its transaction is open, and so does the group.
    assert committed(txn_aware) == {TP0}
    assert store.deleted_offsets == [(txn_aware.partition_for(GROUP), GROUP, [TP1])]
    assert store.deleted == []
    scheduler.advance(10 * RETENTION_MS)
    assert committed(txn_aware) == {TP0}

    pending.by_group.clear()  # the transaction ended (an abort: nothing applied)
    scheduler.advance(CHECK_MS)
    assert committed(txn_aware) == set()
    assert store.deleted == [(txn_aware.partition_for(GROUP), GROUP, [TP0])]
    assert txn_aware.group(GROUP) is None


def test_a_group_with_only_pending_transactional_offsets_is_kept(
    txn_aware: GroupCoordinator, scheduler: FakeScheduler, store: MemoryStore,
    pending: PendingOffsets
) -> None:
    commit_simple(txn_aware, TP1)
    pending.by_group[GROUP] = {TP0}  # committed in a transaction, no offset there yet
    scheduler.advance(RETENTION_MS + CHECK_MS)
    assert committed(txn_aware) == set()
    assert store.deleted == []
    assert txn_aware.group(GROUP) is not None
    # The transaction commits: its offset applies, and counts its retention from its commit.
    txn_aware.apply_transactional_offsets(GROUP, {TP0: OffsetAndMetadata(
        9, -1, "", scheduler.now_ms())})
    pending.by_group.clear()
    scheduler.advance(RETENTION_MS - CHECK_MS)
    assert committed(txn_aware) == {TP0}
    scheduler.advance(2 * CHECK_MS)
    assert committed(txn_aware) == set()
    assert txn_aware.group(GROUP) is None


def test_deleting_every_offset_keeps_a_group_with_pending_transactional_offsets(
    txn_aware: GroupCoordinator, store: MemoryStore, pending: PendingOffsets
) -> None:
    commit_simple(txn_aware, TP1)
    pending.by_group[GROUP] = {TP0}
    assert txn_aware.delete_offsets(GROUP, [TP1]).partitions == {TP1: codes.NONE}
    assert store.deleted == []
    assert txn_aware.group(GROUP) is not None


def test_offsets_of_a_consumer_group_with_members_never_expire(
    scheduler: FakeScheduler, store: MemoryStore
) -> None:
    """A KIP-848 consumer group's offsets are held here (as a group with no classic
    members); retention leaves them alone while the consumer group has members."""
    active = {GROUP}
    coordinator = GroupCoordinator(
        GroupCoordinatorConfig(offsets_retention_minutes=1,
                               offsets_retention_check_interval_ms=CHECK_MS),
        scheduler, store, active_groups=lambda: frozenset(active))
    own_every_partition(coordinator)
    commit_simple(coordinator, TP0)
    scheduler.advance(3 * RETENTION_MS)
    assert committed(coordinator) == {TP0} and store.deleted_offsets == []
    active.clear()  # its last member left: the offsets age as a standalone consumer's do
    scheduler.advance(CHECK_MS)
    assert committed(coordinator) == set()
