"""Rack-aware server-side assignment (KIP-881 racks in KIP-848's ``uniform`` and ``range``):
a partition goes to a member in a rack holding one of its replicas where the balance
allows; the balance and ``uniform``'s stickiness come first."""

from __future__ import annotations

import uuid

from fake_clock import FakeClock as Clock
from group_records_log import Log, owning_everything

from kafkalite_server.group.consumer_assignors import SubscribedTopic, range_, uniform
from kafkalite_server.group.consumer_groups import (
    ConsumerGroupConfig,
    ConsumerGroups,
    Heartbeat,
    Topics,
)
from kafkalite_server.group.group_timeouts import CONSUMER_GROUP_TIMEOUTS, GroupTimeouts

ORDERS = uuid.uuid5(uuid.NAMESPACE_DNS, "orders")
EAST, WEST = frozenset({"east"}), frozenset({"west"})
SPLIT = SubscribedTopic(ORDERS, 4, (WEST, WEST, EAST, EAST))
"""Partitions 0 and 1 have their replicas in the west, 2 and 3 in the east."""
BOTH = {"a": frozenset({"orders"}), "b": frozenset({"orders"})}
RACKS = {"a": "east", "b": "west"}


def test_uniform_gives_each_member_its_own_racks_partitions() -> None:
    assert uniform(BOTH, {"orders": SPLIT}, {}) == {  # without racks: one far each
        "a": {ORDERS: frozenset({0, 2})}, "b": {ORDERS: frozenset({1, 3})}}
    assert uniform(BOTH, {"orders": SPLIT}, {}, RACKS) == {
        "a": {ORDERS: frozenset({2, 3})}, "b": {ORDERS: frozenset({0, 1})}}


def test_uniform_keeps_the_balance_when_one_rack_holds_every_replica() -> None:
    east_only = SubscribedTopic(ORDERS, 4, (EAST,) * 4)
    result = uniform(BOTH, {"orders": east_only}, {}, RACKS)
    assert sorted(len(a[ORDERS]) for a in result.values()) == [2, 2]


def test_uniform_keeps_what_a_member_holds_before_it_looks_at_racks() -> None:
    current = {"a": {ORDERS: frozenset({0, 1})}, "b": {ORDERS: frozenset({2, 3})}}
    assert uniform(BOTH, {"orders": SPLIT}, current, RACKS) == current


def test_uniform_a_member_giving_partitions_up_keeps_those_in_its_rack() -> None:
    alone = {"a": {ORDERS: frozenset({0, 1, 2, 3})}}
    assert uniform(BOTH, {"orders": SPLIT}, alone, RACKS) == {
        "a": {ORDERS: frozenset({2, 3})}, "b": {ORDERS: frozenset({0, 1})}}


def test_range_takes_the_members_racks_partitions_before_the_contiguous_ranges() -> None:
    assert range_(BOTH, {"orders": SPLIT}, {}, RACKS) == {
        "a": {ORDERS: frozenset({2, 3})}, "b": {ORDERS: frozenset({0, 1})}}


def test_range_keeps_contiguous_ranges_when_racks_do_not_tell_partitions_apart() -> None:
    everywhere = SubscribedTopic(ORDERS, 4, (EAST | WEST,) * 4)
    expected = {"a": {ORDERS: frozenset({0, 1})}, "b": {ORDERS: frozenset({2, 3})}}
    assert range_(BOTH, {"orders": everywhere}, {}, RACKS) == expected
    assert range_(BOTH, {"orders": SPLIT}, {}) == expected


def test_the_coordinator_assigns_by_the_members_racks_and_replays_the_partition_racks() -> None:
    clock, log = Clock(), Log()
    topics = Topics(lambda name: 4 if name == "orders" else None, lambda _name: ORDERS,
                    partition_racks=lambda _name: SPLIT.racks)
    config = ConsumerGroupConfig(GroupTimeouts(CONSUMER_GROUP_TIMEOUTS), 10, ("uniform", "range"))

    def groups() -> ConsumerGroups:
        return ConsumerGroups(owning_everything(), log.append, topics, clock, config,
                              other_group_type=lambda _group_id: None)

    coordinator = groups()
    for member, rack in RACKS.items():
        answer = coordinator.heartbeat(Heartbeat("g", member, 0, rack_id=rack,
                                                 rebalance_timeout_ms=30_000,
                                                 subscribed_topic_names=["orders"]))
        assert answer.error == 0
    group = coordinator.group("g")
    assert group is not None
    assert group.target == {"a": {ORDERS: frozenset({2, 3})}, "b": {ORDERS: frozenset({0, 1})}}

    replayed = groups()
    loader = replayed.loader(0)
    loader.load(log.records(0))
    loader.complete()
    again = replayed.group("g")
    assert again is not None
    assert again.subscribed == group.subscribed
    assert again.subscribed["orders"].racks == SPLIT.racks
