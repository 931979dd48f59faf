"""KIP-848 consumer groups, sans-IO on a fake clock: the assignors, the reconciliation
table, the heartbeat's epochs and fencing, incremental rebalances in which no partition is
ever owned twice, session and revocation timeouts, member-epoch offset commits, and the
groups replayed from the records they wrote."""

from __future__ import annotations

import uuid

import pytest
from fake_clock import FakeClock as Clock
from group_records_log import Log, owning_everything

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    NonEmptyGroupError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from kafkalite_server.config import BrokerConfig
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.group.consumer_assignors import (
    Assignment,
    SubscribedTopic,
    range_,
    uniform,
)
from kafkalite_server.group.consumer_groups import (
    ConsumerGroupConfig,
    ConsumerGroups,
    Heartbeat,
    HeartbeatResult,
    Topics,
)
from kafkalite_server.group.consumer_reconciliation import (
    TRANSITIONS,
    MemberState,
    Trigger,
    next_assignment,
)
from kafkalite_server.group.consumer_records import CONSUMER_RECORDS
from kafkalite_server.group.group_timeouts import CONSUMER_GROUP_TIMEOUTS, GroupTimeouts
from kafkalite_server.group.modern_records import decode_group_record
from kafkalite_server.group.topic_regex import TopicRegexError, compile_topic_regex

ORDERS = uuid.uuid5(uuid.NAMESPACE_DNS, "orders")
AUDIT = uuid.uuid5(uuid.NAMESPACE_DNS, "audit")
SESSION_MS = 45_000
REBALANCE_MS = 30_000


class Cluster:
    """Topic partition counts a test can change."""

    def __init__(self) -> None:
        self.counts = {"orders": 6, "audit": 2}
        self.ids = {"orders": ORDERS, "audit": AUDIT}

    def topics(self) -> Topics:
        return Topics(self.counts.get, lambda name: self.ids.get(name, uuid.uuid4()),
                      lambda: frozenset(self.counts))


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_groups(clock: Clock, log: Log, cluster: Cluster | None = None, *,
                other: dict[str, str] | None = None,
                ownership: Ownership | None = None,
                group_configs: dict[str, dict[str, str]] | None = None) -> ConsumerGroups:
    kinds = other or {}
    configs = {} if group_configs is None else group_configs
    return ConsumerGroups(ownership or owning_everything(), log.append,
                          (cluster or Cluster()).topics(), clock,
                          ConsumerGroupConfig(GroupTimeouts(CONSUMER_GROUP_TIMEOUTS, SESSION_MS),
                                              10, ("uniform", "range")),
                          other_group_type=kinds.get,
                          group_configs=lambda group_id: configs.get(group_id, {}))


def orders(*partitions: int) -> Assignment:
    return {ORDERS: frozenset(partitions)} if partitions else {}


class Member:
    """A well-behaved member: it owns what it was last given and reports it."""

    def __init__(self, groups: ConsumerGroups, member_id: str, topics: tuple[str, ...] = ("orders",),
                 assignor: str | None = None) -> None:
        self.groups = groups
        self.member_id = member_id
        self.topics = topics
        self.assignor = assignor
        self.epoch = 0
        self.owned: Assignment = {}

    def heartbeat(self, **changes: object) -> HeartbeatResult:
        joining = self.epoch == 0
        fields: dict[str, object] = {
            "group_id": "g", "member_id": self.member_id, "member_epoch": self.epoch,
            "rebalance_timeout_ms": REBALANCE_MS if joining else -1,
            "subscribed_topic_names": list(self.topics) if joining else None,
            "server_assignor": self.assignor if joining else None, "owned": self.owned}
        fields.update(changes)
        result = self.groups.heartbeat(Heartbeat(**fields))  # type: ignore[arg-type]
        if not result.error:
            self.epoch = result.member_epoch
            if result.assignment is not None:
                self.owned = result.assignment
        return result

    def partitions(self) -> set[int]:
        return set(self.owned.get(ORDERS, frozenset()))


def assert_never_owned_twice(groups: ConsumerGroups) -> None:
    group = groups.group("g")
    assert group is not None
    seen: set[tuple[uuid.UUID, int]] = set()
    for member in group.members.values():
        for held in (member.current.assigned, member.current.pending_revocation):
            for topic, partitions in held.items():
                for p in partitions:
                    assert (topic, p) not in seen, f"{topic}-{p} owned twice"
                    seen.add((topic, p))


def settle(groups: ConsumerGroups, members: list[Member], rounds: int = 6) -> None:
    for _ in range(rounds):
        for member in members:
            assert member.heartbeat().error == 0
            assert_never_owned_twice(groups)


# ------------------------------------------------------------------ assignors

TOPICS = {"orders": SubscribedTopic(ORDERS, 6), "audit": SubscribedTopic(AUDIT, 2)}


def test_uniform_balances_and_moves_only_what_must_move() -> None:
    two = uniform({"a": frozenset({"orders"}), "b": frozenset({"orders"})}, TOPICS, {})
    assert sorted(len(a[ORDERS]) for a in two.values()) == [3, 3]
    three = uniform({m: frozenset({"orders"}) for m in "abc"}, TOPICS, two)
    assert sorted(len(a[ORDERS]) for a in three.values()) == [2, 2, 2]
    for member in "ab":  # the first two keep two of their three each
        assert three[member][ORDERS] <= two[member][ORDERS]
    assert set().union(*(a[ORDERS] for a in three.values())) == set(range(6))


def test_uniform_with_different_subscriptions_assigns_only_subscribed_topics() -> None:
    result = uniform({"a": frozenset({"orders", "audit"}), "b": frozenset({"orders"})},
                     TOPICS, {})
    assert AUDIT not in result["b"]
    assert len(result["a"].get(ORDERS, frozenset())) + len(result["a"][AUDIT]) == 4
    assert len(result["b"][ORDERS]) == 4


def test_range_gives_contiguous_ranges_per_topic() -> None:
    result = range_({m: frozenset({"orders", "audit"}) for m in "abcd"}, TOPICS, {})
    assert result["a"] == {ORDERS: frozenset({0, 1}), AUDIT: frozenset({0})}
    assert result["b"] == {ORDERS: frozenset({2, 3}), AUDIT: frozenset({1})}
    assert result["c"] == {ORDERS: frozenset({4})}
    assert result["d"] == {ORDERS: frozenset({5})}


# ------------------------------------------------------------------ reconciliation


def test_the_transition_table_covers_every_state_and_trigger() -> None:
    assert set(TRANSITIONS) == {(s, t) for s in MemberState for t in Trigger}


def test_a_member_revokes_before_it_gains() -> None:
    step = next_assignment(1, orders(0, 1, 2), orders(0, 1, 3), 2, lambda t, p: False)
    assert step.state is MemberState.UNREVOKED_PARTITIONS
    assert (step.member_epoch, step.assigned, step.pending_revocation) == \
        (1, orders(0, 1), orders(2))
    gained = next_assignment(1, step.assigned, orders(0, 1, 3), 2, lambda t, p: p == 3)
    assert (gained.state, gained.member_epoch, gained.assigned) == \
        (MemberState.UNRELEASED_PARTITIONS, 2, orders(0, 1))
    free = next_assignment(2, gained.assigned, orders(0, 1, 3), 2, lambda t, p: False)
    assert (free.state, free.assigned) == (MemberState.STABLE, orders(0, 1, 3))


# ------------------------------------------------------------------ heartbeats


def test_members_join_split_and_rebalance_incrementally(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    a, b, c = (Member(groups, name) for name in "abc")
    first = a.heartbeat()
    assert (first.error, first.member_id, first.member_epoch) == (0, "a", 1)
    assert a.partitions() == set(range(6))
    b.heartbeat()
    assert b.partitions() == set()  # a still owns everything
    settle(groups, [a, b])
    assert sorted(map(len, (a.partitions(), b.partitions()))) == [3, 3]
    before = {"a": a.partitions(), "b": b.partitions()}
    c.heartbeat()
    settle(groups, [a, b, c])
    assert [len(m.partitions()) for m in (a, b, c)] == [2, 2, 2]
    assert a.partitions() <= before["a"] and b.partitions() <= before["b"]
    group = groups.group("g")
    assert group is not None and group.state == "Stable"
    assert {m.member_epoch for m in group.members.values()} == {group.group_epoch} == {3}


def test_a_member_leaving_frees_its_partitions(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    a, b = Member(groups, "a"), Member(groups, "b")
    a.heartbeat()
    b.heartbeat()
    settle(groups, [a, b])
    assert b.heartbeat(member_epoch=-1).member_epoch == -1
    settle(groups, [a], rounds=2)
    assert a.partitions() == set(range(6))


def test_epochs_are_checked(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    a = Member(groups, "a")
    a.heartbeat()
    assert a.heartbeat(member_epoch=7).error == FencedMemberEpochError.errno
    assert a.heartbeat(member_id="nobody").error == UnknownMemberIdError.errno
    Member(groups, "b").heartbeat()
    settle(groups, [a])
    # the previous epoch is fine while the member owns no more than its assignment
    group = groups.group("g")
    assert group is not None
    previous = group.members["a"].previous_member_epoch
    assert a.heartbeat(member_epoch=previous, owned=orders(*sorted(a.partitions()))).error == 0
    assert a.heartbeat(member_epoch=previous, owned=orders(0, 1, 2, 3, 4, 5)).error == \
        FencedMemberEpochError.errno


def test_bad_requests_and_other_group_types_are_refused(clock: Clock) -> None:
    groups = make_groups(clock, Log(), other={"classic-g": "classic"})
    assert Member(groups, "a", assignor="sticky").heartbeat().error == \
        UnsupportedAssignorError.errno
    regex = Member(groups, "a").heartbeat(subscribed_topic_regex="(or)ders\\1")
    assert regex.error == InvalidRegularExpressionError.errno and "backreference" in \
        (regex.message or "")
    assert Member(groups, "a").heartbeat(subscribed_topic_regex="").error == 0  # librdkafka's
    assert Member(groups, "a").heartbeat(member_epoch=3, member_id="").error == \
        InvalidRequestError.errno
    other = Member(groups, "a").heartbeat(group_id="classic-g")
    assert other.error == GroupIdNotFoundError.errno and "classic" in (other.message or "")


def test_range_is_used_when_members_ask_for_it(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    a, b = Member(groups, "a", assignor="range"), Member(groups, "b", assignor="range")
    a.heartbeat()
    b.heartbeat()
    settle(groups, [a, b])
    assert (a.partitions(), b.partitions()) == ({0, 1, 2}, {3, 4, 5})
    group = groups.group("g")
    assert group is not None and group.assignor == "range"


def test_added_partitions_bump_the_group_epoch(clock: Clock) -> None:
    cluster = Cluster()
    groups = make_groups(clock, Log(), cluster)
    a = Member(groups, "a")
    a.heartbeat()
    cluster.counts["orders"] = 8
    a.heartbeat()
    assert a.epoch == 2 and a.partitions() == set(range(8))


def test_a_groups_own_session_timeout_decides_when_its_silent_member_leaves(
        clock: Clock) -> None:
    configs: dict[str, dict[str, str]] = {}
    groups = make_groups(clock, Log(), group_configs=configs)
    a = Member(groups, "a")
    a.heartbeat()
    configs["g"] = {"consumer.session.timeout.ms": "55000",
                    "consumer.heartbeat.interval.ms": "7000"}
    assert groups.heartbeat_interval_ms("g") == 7000
    assert groups.heartbeat_interval_ms("other") == 5000
    a.heartbeat()  # the group's value applies from the member's next heartbeat
    clock.now += SESSION_MS + 1
    groups.expire_members()
    group = groups.group("g")
    assert group is not None and set(group.members) == {"a"}
    clock.now += 55_000 - SESSION_MS
    groups.expire_members()
    assert not group.members


def test_group_timeouts_stay_within_the_brokers_bounds_and_in_order() -> None:
    timeouts = GroupTimeouts(CONSUMER_GROUP_TIMEOUTS, 45_000, 5000, (45_000, 60_000),
                             (5000, 50_000))
    timeouts.validate({"consumer.session.timeout.ms": "50000", "share.session.timeout.ms": "1"})
    with pytest.raises(ConfigError, match=r"consumer.session.timeout.ms.*'1000' is not "
                                          r"between 45000 and 60000 ms"):
        timeouts.validate({"consumer.session.timeout.ms": "1000"})
    with pytest.raises(ConfigError, match=r"consumer.heartbeat.interval.ms.*'soon'"):
        timeouts.validate({"consumer.heartbeat.interval.ms": "soon"})
    with pytest.raises(ConfigError, match=r"46000 ms is not less than the session timeout, "
                                          r"45000 ms"):
        timeouts.validate({"consumer.heartbeat.interval.ms": "46000"})


def test_silent_and_unrevoking_members_are_removed(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    a, b = Member(groups, "a"), Member(groups, "b")
    a.heartbeat()
    b.heartbeat()
    clock.now += SESSION_MS - 1
    a.heartbeat()  # asked to revoke three partitions; never acknowledges
    groups.expire_members()
    group = groups.group("g")
    assert group is not None and set(group.members) == {"a", "b"}
    clock.now += 2
    groups.expire_members()
    assert set(group.members) == {"a"}  # b's session ran out
    c = Member(groups, "c")
    c.heartbeat()
    a.heartbeat(owned=None)  # still holding what it must give up
    assert group.members["a"].current.state is MemberState.UNREVOKED_PARTITIONS
    clock.now += REBALANCE_MS
    c.heartbeat()
    groups.expire_members()
    assert set(group.members) == {"c"}
    settle(groups, [c], rounds=2)
    assert c.partitions() == set(range(6))


def test_offset_commits_carry_the_member_epoch(clock: Clock) -> None:
    groups = make_groups(clock, Log())
    a = Member(groups, "a")
    a.heartbeat()
    assert groups.validate_commit("g", "a", 1) == 0
    assert groups.validate_commit("g", "a", 0) == StaleMemberEpochError.errno
    assert groups.validate_commit("g", "a", 2) == FencedMemberEpochError.errno
    assert groups.validate_commit("g", "zz", 1) == UnknownMemberIdError.errno
    assert groups.validate_commit("g", "", -1) == UnknownMemberIdError.errno
    assert groups.validate_commit("not-consumer", "a", 1) is None
    assert groups.delete("g") == NonEmptyGroupError.errno
    assert groups.validate_commit("g", "client-made-id", -1) == UnknownMemberIdError.errno
    a.heartbeat(member_epoch=-1)
    assert groups.validate_commit("g", "", -1) == 0
    assert groups.validate_commit("g", "client-made-id", -1) == 0  # KIP-1082 ids
    assert groups.delete("g") == 0 and groups.group("g") is None


def test_groups_come_back_from_their_records(clock: Clock) -> None:
    log = Log()
    groups = make_groups(clock, log)
    a, b, c = (Member(groups, name) for name in "abc")
    a.heartbeat()
    b.heartbeat()
    settle(groups, [a, b])
    c.heartbeat()
    a.heartbeat()  # a is mid-revocation when the coordinator moves
    records = log.records(0)
    assert all(decode_group_record(CONSUMER_RECORDS.by_key_version, r.key, r.value) is not None for r in records if r.key)
    replayed = make_groups(clock, log)  # the successor appends to the same partition
    loader = replayed.loader(0)
    loader.load(records)
    loader.complete()
    before, after = groups.group("g"), replayed.group("g")
    assert before is not None and after is not None
    assert (after.group_epoch, after.assignment_epoch, after.target, after.subscribed) == \
        (before.group_epoch, before.assignment_epoch, before.target, before.subscribed)
    for member_id, member in before.members.items():
        again = after.members[member_id]
        assert (again.current, again.previous_member_epoch, again.subscribed_topics) == \
            (member.current, member.previous_member_epoch, member.subscribed_topics)
    # the group carries on at the new coordinator
    for member in (a, b, c):
        member.groups = replayed
    settle(replayed, [a, b, c])
    assert [len(m.partitions()) for m in (a, b, c)] == [2, 2, 2]
    # a deleted group leaves only tombstones behind
    for member in (a, b, c):
        member.heartbeat(member_epoch=-1)
    assert replayed.delete("g") == 0
    empty = make_groups(clock, Log())
    reloader = empty.loader(0)
    reloader.load(log.records(0))
    reloader.complete()
    assert empty.group("g") is None


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?P<t>a)(?P=t)", r"a(?=b)", r"a(?!b)",
                                     r"(?<=a)b", r"(?<!a)b", r"(?>a)", r"(a)?(?(1)b)",
                                     r"a*+", r"a++", r"a?+", r"a{2}+", r"a[", r"(a"])
def test_regexes_re2_lacks_or_invalid_ones_are_refused(pattern: str) -> None:
    with pytest.raises(TopicRegexError):
        compile_topic_regex(pattern)


def test_a_regex_subscription_follows_the_topics_it_matches(clock: Clock) -> None:
    cluster = Cluster()
    cluster.counts = {"orders-eu": 2, "orders": 1, "audit": 2}
    cluster.ids.update({"orders-eu": uuid.uuid5(uuid.NAMESPACE_DNS, "orders-eu"),
                        "orders-us": uuid.uuid5(uuid.NAMESPACE_DNS, "orders-us")})
    log = Log()
    groups = make_groups(clock, log, cluster)
    a = Member(groups, "a", topics=())
    assert a.heartbeat(subscribed_topic_regex="(^orders-.*)").error == 0
    assert a.owned == {}  # resolved apart from the heartbeat, as Kafka 4 does
    groups.refresh_regexes()
    a.heartbeat()
    assert a.owned == {cluster.ids["orders-eu"]: frozenset({0, 1})}  # a whole-name match
    cluster.counts["orders-us"] = 1  # a new topic the regex matches bumps the group epoch
    groups.refresh_regexes()
    a.heartbeat()
    assert a.epoch == 3 and set(a.owned) == {cluster.ids["orders-eu"], cluster.ids["orders-us"]}
    replayed = make_groups(clock, Log(), cluster)
    loader = replayed.loader(0)
    loader.load(log.records(0))
    loader.complete()
    group = replayed.group("g")
    assert group is not None and group.members["a"].subscribed_regex == "(^orders-.*)"
    # resolved again on loading: the failover does not take the matched topics away
    assert group.resolved_regexes == {"(^orders-.*)": frozenset({"orders-eu", "orders-us"})}


def test_regexes_are_resolved_apart_from_the_heartbeats_named_topics_first(
        clock: Clock) -> None:
    """What librdkafka's 0045 "resubscribe with regex" expects of a Kafka 4 broker."""
    cluster = Cluster()
    cluster.counts = {"rx-1": 2, "rx-2": 2, "plain": 1}
    cluster.ids.update({name: uuid.uuid5(uuid.NAMESPACE_DNS, name)
                        for name in ("rx-1", "rx-2", "rx-3", "plain")})
    log = Log()
    groups = make_groups(clock, log, cluster)
    a = Member(groups, "a", topics=("plain",))
    a.heartbeat(subscribed_topic_regex="^rx-.*")
    assert set(a.owned) == {cluster.ids["plain"]}  # the named topic at once
    groups.refresh_regexes()
    group = groups.group("g")
    assert group is not None and group.group_epoch == 2  # the matched topics: a new epoch
    a.heartbeat()
    assert set(a.owned) == {cluster.ids[t] for t in ("plain", "rx-1", "rx-2")}
    groups.refresh_regexes()  # nothing changed: no new epoch
    assert group.group_epoch == 2
    # a second member with a regex the group has resolved already gets its topics at once
    b = Member(groups, "b", topics=())
    b.heartbeat(subscribed_topic_regex="^rx-.*")
    assert set(group.target["b"]) <= {cluster.ids["rx-1"], cluster.ids["rx-2"]}
    assert group.target["b"]
    # a topic created or deleted: the regexes are resolved again
    cluster.counts["rx-3"] = 1
    del cluster.counts["rx-1"]
    groups.refresh_regexes()
    assert group.resolved_regexes == {"^rx-.*": frozenset({"rx-2", "rx-3"})}
    assert group.group_epoch == 4
    # the regex no member uses any more is forgotten with the leave: joining with it again
    # resolves it anew, named topics first (librdkafka leaves and rejoins on a new
    # subscription)
    a.heartbeat(member_epoch=-1)
    b.heartbeat(member_epoch=-1)
    assert group.resolved_regexes == {}
    c = Member(groups, "c", topics=("plain",))
    c.heartbeat(subscribed_topic_regex="^rx-.*")
    assert set(c.owned) == {cluster.ids["plain"]}


def test_a_static_member_restarts_without_a_rebalance(clock: Clock) -> None:
    log = Log()
    groups = make_groups(clock, log)
    a, b = Member(groups, "a"), Member(groups, "b")
    assert a.heartbeat(instance_id="host-a").error == 0
    b.heartbeat()
    settle(groups, [a, b])
    group = groups.group("g")
    assert group is not None
    epoch, kept = group.group_epoch, a.partitions()
    assert a.heartbeat(member_epoch=-2).member_epoch == -2  # restarting: keeps its place
    again = Member(groups, "a2")
    other = Member(groups, "a3").heartbeat(instance_id="host-b")  # another instance: new
    assert other.error == 0
    groups.heartbeat(Heartbeat("g", "a3", -1))
    assert again.heartbeat(instance_id="host-a").error == 0
    assert again.partitions() == kept and "a" not in group.members
    assert group.group_epoch == epoch + 2  # a3's join and leave only, none for the restart
    # while the instance is in use, another member cannot take it
    clash = Member(groups, "a4").heartbeat(instance_id="host-a")
    assert clash.error == UnreleasedInstanceIdError.errno
    # replayed, the static member and its place come back
    again.heartbeat(member_epoch=-2)
    replayed = make_groups(clock, Log())
    loader = replayed.loader(0)
    loader.load(log.records(0))
    loader.complete()
    back = replayed.group("g")
    assert back is not None and back.members["a2"].static_left
    assert back.members["a2"].current == group.members["a2"].current
    # a restarted member that never comes back is removed when its session ends
    clock.now += SESSION_MS
    groups.expire_members()
    assert "a2" not in group.members


def test_the_assignors_setting_takes_kafkas_names_and_refuses_others() -> None:
    config = BrokerConfig.from_properties({"group.consumer.assignors":
                                           "org.apache.kafka.coordinator.group.assignor."
                                           "RangeAssignor, uniform"})
    assert config.group_consumer_assignors == ("range", "uniform")
    assert BrokerConfig().group_consumer_assignors == ("uniform", "range")
    with pytest.raises(ConfigError, match=r"group\.consumer\.assignors"):
        BrokerConfig.from_properties({"group.consumer.assignors": "sticky"})
