"""KIP-848's online migration, sans-IO on a fake clock: the real classic coordinator and the
real consumer groups side by side, as the broker runs them. A consumer-protocol member
joining a classic group upgrades it (the classic member stays, speaking JoinGroup, SyncGroup
and Heartbeat, and its committed offsets stay); no partition is ever owned twice on the way;
the last consumer-protocol member leaving downgrades it; the records replay the classic
member after a failover; ``group.consumer.migration.policy`` refuses what it disables."""

from __future__ import annotations

import uuid

import pytest
from group_records_log import Log

from kafkalite.errors import ConfigError
from kafkalite.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafkalite.protocol.errors import (
    GroupIdNotFoundError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnsupportedVersionError,
)
from kafkalite.protocol.states import GroupState
from kafkalite_server.config import BrokerConfig
from kafkalite_server.group import GroupCoordinator, JoinRequest
from kafkalite_server.group.consumer_groups import (
    ConsumerGroupConfig,
    ConsumerGroups,
    Heartbeat,
    Topics,
)
from kafkalite_server.group.consumer_migration import ClassicGroupsPort, MigrationPolicy
from kafkalite_server.group.group_timeouts import CONSUMER_GROUP_TIMEOUTS, GroupTimeouts
from kafkalite_server.group.offsets import OffsetCommitEntry, TopicPartition

from .fakes import FakeScheduler, MemoryStore, make_coordinator, sync

ORDERS = uuid.uuid5(uuid.NAMESPACE_DNS, "orders")
GROUP = "g"
TP0 = TopicPartition("orders", 0)


class Side:
    """Both coordinators of one broker on one fake clock, and what they appended."""

    def __init__(self, policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL) -> None:
        self.scheduler = FakeScheduler()
        self.classic: GroupCoordinator = make_coordinator(self.scheduler, MemoryStore())
        self.log = Log()
        self.consumer = self.consumer_groups(policy)

    def consumer_groups(self, policy: MigrationPolicy) -> ConsumerGroups:
        return ConsumerGroups(
            self.classic.ownership, self.log.append,
            Topics(lambda name: 6 if name == "orders" else None, lambda _name: ORDERS,
                   lambda: frozenset({"orders"})),
            self.scheduler.now_ms,
            ConsumerGroupConfig(GroupTimeouts(CONSUMER_GROUP_TIMEOUTS), 10, ("uniform", "range"), policy),
            other_group_type=lambda group_id: "classic" if self.classic_members() else None,
            classic=ClassicGroupsPort(self.classic.migration_snapshot, self.classic.hand_over,
                                      self.classic.take_back))

    def classic_members(self) -> list[str]:
        group = self.classic.group(GROUP)
        return [] if group is None else list(group.members)

    def owned(self) -> dict[str, set[int]]:
        group = self.consumer.group(GROUP)
        assert group is not None
        return {m.member_id: set(m.current.assigned.get(ORDERS, frozenset()))
                | set(m.current.pending_revocation.get(ORDERS, frozenset()))
                for m in group.members.values()}

    def assert_never_owned_twice(self) -> None:
        owned = list(self.owned().values())
        for i, mine in enumerate(owned):
            for theirs in owned[i + 1:]:
                assert not mine & theirs, owned


def subscription(owned: list[int] | None = None) -> bytes:
    return ConsumerProtocolSubscription(
        ["orders"], owned_partitions=[("orders", owned)] if owned else []).encode(1)


def join_request(member_id: str, owned: list[int] | None = None) -> JoinRequest:
    return JoinRequest(GROUP, member_id, "classic-client", "/127.0.0.1", 10_000, 30_000,
                       "consumer", [("range", subscription(owned))],
                       require_known_member_id=True)


def partitions(assignment: bytes) -> set[int]:
    return {p for topic, ps in ConsumerProtocolAssignment.decode(assignment).partitions
            for p in ps if topic == "orders"}


def classic_stable_group(side: Side) -> tuple[str, int]:
    """One classic member owning all six partitions, with an offset committed."""
    answers: list = []
    side.classic.join_group(join_request(""), answers.append)
    member_id = answers[0].member_id
    answers.clear()
    side.classic.join_group(join_request(member_id), answers.append)
    side.scheduler.advance(0)
    joined = answers[0]
    assert joined.error == 0 and joined.leader_id == member_id
    everything = ConsumerProtocolAssignment([("orders", list(range(6)))]).encode(1)
    assert sync(side.classic, member_id, joined.generation_id, {member_id: everything},
                group=GROUP)[0].error == 0
    committed = side.classic.commit_offsets(GROUP, joined.generation_id, member_id,
                                            {TP0: OffsetCommitEntry(42, -1, "")})
    assert committed == {TP0: 0}
    return member_id, joined.generation_id


def consumer_heartbeat(side: Side, member_id: str, epoch: int,
                       owned: set[int] | None = None) -> tuple[int, int, set[int] | None]:
    result = side.consumer.heartbeat(Heartbeat(
        GROUP, member_id, epoch, rebalance_timeout_ms=30_000 if epoch == 0 else -1,
        subscribed_topic_names=["orders"] if epoch == 0 else None,
        owned=None if owned is None else {ORDERS: frozenset(owned)} if owned else {}))
    got = None if result.assignment is None else set(result.assignment.get(ORDERS, ()))
    return result.error, result.member_epoch, got


def classic_rejoin(side: Side, member_id: str, owned: list[int] | None = None
                   ) -> tuple[int, set[int]]:
    """The classic member rejoins and syncs, through the consumer groups."""
    joined = side.consumer.classic_join(join_request(member_id, owned))
    assert joined is not None and joined.error == 0, joined
    assert joined.leader_id == "" and joined.members == []  # the assignor assigns
    synced = side.consumer.classic_sync(GROUP, joined.generation_id, member_id, None)
    assert synced is not None and synced.error == 0, synced
    return joined.generation_id, partitions(synced.assignment)


def offset(side: Side) -> int:
    committed = side.classic.fetch_offsets(GROUP, [TP0]).offsets[TP0]
    assert committed is not None
    return committed.offset


def test_upgrade_then_downgrade_keeps_the_classic_member_and_its_offsets() -> None:
    side = Side()
    classic_id, generation = classic_stable_group(side)

    # a consumer-protocol member joins: the group is a consumer group now
    error, b_epoch, b_got = consumer_heartbeat(side, "b", 0)
    assert error == 0 and b_got == set()  # all six are still the classic member's
    assert side.classic_members() == []
    group = side.consumer.group(GROUP)
    assert group is not None and set(group.members) == {classic_id, "b"}
    assert group.members[classic_id].classic is not None
    side.assert_never_owned_twice()

    # the classic member learns of the rebalance from its heartbeat, rejoins and revokes
    assert side.consumer.classic_heartbeat(GROUP, generation, classic_id, None) == \
        RebalanceInProgressError.errno
    kept_generation, kept = classic_rejoin(side, classic_id)
    assert kept_generation == generation and len(kept) == 3  # it still owes three
    side.assert_never_owned_twice()
    assert consumer_heartbeat(side, "b", b_epoch, set())[2] in (None, set())  # not yet
    assert side.consumer.classic_heartbeat(GROUP, kept_generation, classic_id, None) == \
        RebalanceInProgressError.errno
    new_generation, mine = classic_rejoin(side, classic_id)
    assert new_generation > generation and mine == kept
    assert side.consumer.classic_heartbeat(GROUP, new_generation, classic_id, None) == 0

    error, b_epoch, b_got = consumer_heartbeat(side, "b", b_epoch, set())
    assert error == 0 and b_got == set(range(6)) - mine
    side.assert_never_owned_twice()

    # offsets: the committed one is still there; the classic member commits with its
    # generation (an old one is ILLEGAL_GENERATION), at any OffsetCommit version
    assert offset(side) == 42
    assert side.consumer.validate_commit(GROUP, classic_id, new_generation,
                                         member_epoch_api=False) == 0
    assert side.consumer.validate_commit(GROUP, classic_id, generation) == \
        IllegalGenerationError.errno
    assert side.consumer.validate_commit(GROUP, "b", b_epoch, member_epoch_api=False) == \
        UnsupportedVersionError.errno

    # the consumer-protocol member leaves: the group is classic again and rebalances
    assert consumer_heartbeat(side, "b", -1)[0] == 0
    assert side.consumer.group(GROUP) is None
    classic = side.classic.group(GROUP)
    assert classic is not None and list(classic.members) == [classic_id]
    assert classic.state is GroupState.PREPARING_REBALANCE
    assert side.classic.heartbeat(GROUP, new_generation, classic_id) == \
        RebalanceInProgressError.errno
    # it comes back with its target assignment; the rebalance gives it the rest
    assert partitions(classic.members[classic_id].assignment) == mine
    answers: list = []
    side.classic.join_group(join_request(classic_id), answers.append)
    side.scheduler.advance(0)
    assert answers[0].error == 0 and answers[0].leader_id == classic_id
    assert answers[0].generation_id > new_generation
    assert offset(side) == 42

    # the consumer group's records are all tombstoned: a replay finds no group
    replayed = Side().consumer
    loader = replayed.loader(side.classic.partition_for(GROUP))
    loader.load(side.log.records(side.classic.partition_for(GROUP)))
    loader.complete()
    assert replayed.group(GROUP) is None


def test_a_failover_resumes_the_classic_member_from_the_records() -> None:
    side = Side()
    classic_id, generation = classic_stable_group(side)
    consumer_heartbeat(side, "b", 0)
    partition = side.classic.partition_for(GROUP)

    successor = Side()
    loader = successor.consumer.loader(partition)
    loader.load(side.log.records(partition))
    loader.complete()
    group = successor.consumer.group(GROUP)
    assert group is not None
    member = group.members[classic_id]
    assert member.classic == side.consumer.group(GROUP).members[classic_id].classic  # type: ignore[union-attr]
    assert member.current.assigned == {ORDERS: frozenset(range(6))}
    # it answers the classic member's heartbeat and rejoin as the old coordinator would
    assert successor.consumer.classic_heartbeat(GROUP, generation, classic_id, None) == \
        RebalanceInProgressError.errno
    assert len(classic_rejoin(successor, classic_id)[1]) == 3


@pytest.mark.parametrize("policy", [MigrationPolicy.DISABLED, MigrationPolicy.DOWNGRADE])
def test_a_policy_without_upgrade_refuses_the_joining_member(policy: MigrationPolicy) -> None:
    side = Side(policy)
    classic_id, _ = classic_stable_group(side)
    error, _, _ = consumer_heartbeat(side, "b", 0)
    assert error == GroupIdNotFoundError.errno  # Kafka's answer
    assert side.consumer.group(GROUP) is None and side.classic_members() == [classic_id]


def test_an_upgrade_only_policy_keeps_the_consumer_group_when_classic_members_remain() -> None:
    side = Side(MigrationPolicy.UPGRADE)
    classic_id, _ = classic_stable_group(side)
    consumer_heartbeat(side, "b", 0)
    assert consumer_heartbeat(side, "b", -1)[0] == 0
    group = side.consumer.group(GROUP)
    assert group is not None and list(group.members) == [classic_id]
    assert side.classic_members() == []


def test_an_expired_consumer_member_downgrades_the_group_too() -> None:
    side = Side()
    classic_id, generation = classic_stable_group(side)
    consumer_heartbeat(side, "b", 0)
    # the classic member keeps heartbeating (it is told to rejoin), the other goes silent
    for _ in range(6):
        side.scheduler.advance(9_000)
        side.consumer.classic_heartbeat(GROUP, generation, classic_id, None)
    side.consumer.expire_members()
    assert side.consumer.group(GROUP) is None
    assert side.classic_members() == [classic_id]


def test_a_classic_member_takes_over_an_empty_consumer_group_but_not_a_live_one() -> None:
    side = Side()
    assert consumer_heartbeat(side, "b", 0)[0] == 0
    # a classic JoinGroup is answered for the live consumer group, as a new member
    answer = side.consumer.classic_join(join_request(""))
    assert answer is not None and answer.error == MemberIdRequiredError.errno
    # a classic JoinGroup naming the consumer-protocol member is refused
    named = side.consumer.classic_join(join_request("b"))
    assert named is not None and named.error == InconsistentGroupProtocolError.errno
    assert consumer_heartbeat(side, "b", -1)[0] == 0
    # the empty consumer group gives the id to the classic coordinator
    assert side.consumer.classic_join(join_request("")) is None
    assert side.consumer.group(GROUP) is None


def test_the_policy_setting_takes_kafkas_values_in_any_case() -> None:
    assert BrokerConfig().group_consumer_migration_policy == "bidirectional"  # Kafka 4.0's
    config = BrokerConfig.from_properties({"group.consumer.migration.policy": "UPGRADE"})
    assert MigrationPolicy(config.group_consumer_migration_policy) is MigrationPolicy.UPGRADE
    with pytest.raises(ConfigError, match=r"group\.consumer\.migration\.policy"):
        BrokerConfig.from_properties({"group.consumer.migration.policy": "sideways"})
