"""The share groups' simple assignor, a pure function: balance with no more members than
partitions and with more, stickiness when members join and leave, heterogeneous
subscriptions, uninitialized partitions never assigned, and determinism."""

from __future__ import annotations

import itertools
import random
import uuid
from collections import Counter

from kafkalite_server.share.simple_assignor import Assignment, assign

ORDERS = uuid.uuid5(uuid.NAMESPACE_DNS, "orders")
PAYMENTS = uuid.uuid5(uuid.NAMESPACE_DNS, "payments")


def everyone(members: list[str], partitions: range | tuple[int, ...],
             topic: uuid.UUID = ORDERS) -> dict[str, dict[uuid.UUID, tuple[int, ...]]]:
    return {m: {topic: tuple(partitions)} for m in members}


def counts(result: dict[str, Assignment], topic: uuid.UUID = ORDERS) -> list[int]:
    return [len(a.get(topic, ())) for a in result.values()]


def holders(result: dict[str, Assignment], topic: uuid.UUID = ORDERS) -> Counter[int]:
    return Counter(p for a in result.values() for p in a.get(topic, ()))


def assert_split(result: dict[str, Assignment], partitions: int,
                 topic: uuid.UUID = ORDERS) -> None:
    """Each partition to exactly one member, member counts within one."""
    assert holders(result, topic) == Counter(range(partitions))
    assert max(counts(result, topic)) - min(counts(result, topic)) <= 1


def assert_shared(result: dict[str, Assignment], partitions: int,
                  topic: uuid.UUID = ORDERS) -> None:
    """One partition per member, members per partition within one."""
    assert counts(result, topic) == [1] * len(result)
    sharers = holders(result, topic)
    assert set(sharers) == set(range(partitions))
    assert max(sharers.values()) - min(sharers.values()) <= 1


def test_no_more_members_than_partitions_splits_them() -> None:
    for members, partitions in itertools.product(range(1, 8), range(1, 12)):
        if members <= partitions:
            names = [f"m{i}" for i in range(members)]
            assert_split(assign(everyone(names, range(partitions)), {}), partitions)
    # free partitions go round the members, fewest held first
    assert assign(everyone(["a", "b"], range(4)), {}) == {
        "a": {ORDERS: (0, 2)}, "b": {ORDERS: (1, 3)}}


def test_more_members_than_partitions_share_them_evenly() -> None:
    for members, partitions in itertools.product(range(2, 12), range(1, 8)):
        if members > partitions:
            names = [f"m{i}" for i in range(members)]
            result = assign(everyone(names, range(partitions)), {})
            assert_shared(result, partitions)
            assert max(holders(result).values()) == -(-members // partitions)  # ceil


def test_a_joining_member_takes_partitions_from_the_most_loaded() -> None:
    current: dict[str, Assignment] = {"a": {ORDERS: (0, 1, 2)}, "b": {ORDERS: (3, 4, 5)}}
    result = assign(everyone(["a", "b", "c"], range(6)), current)
    assert_split(result, 6)
    assert set(result["a"][ORDERS]) <= {0, 1, 2} and set(result["b"][ORDERS]) <= {3, 4, 5}
    assert result["c"] == {ORDERS: (2, 5)}  # one from each, nothing else moves
    # uneven load: only the member above its share gives up a partition
    current = {"a": {ORDERS: (0, 1, 2, 3)}, "b": {ORDERS: (4, 5)}}
    result = assign(everyone(["a", "b", "c"], range(6)), current)
    assert result == {"a": {ORDERS: (0, 1)}, "b": {ORDERS: (4, 5)}, "c": {ORDERS: (2, 3)}}


def test_a_joining_member_beyond_the_partition_count_shares_the_least_shared() -> None:
    current = {"a": {ORDERS: (0,)}, "b": {ORDERS: (1,)}, "c": {ORDERS: (0,)}}
    result = assign(everyone(["a", "b", "c", "d"], range(2)), current)
    assert result == {"a": {ORDERS: (0,)}, "b": {ORDERS: (1,)}, "c": {ORDERS: (0,)},
                      "d": {ORDERS: (1,)}}


def test_a_member_leaving_hands_its_partitions_to_the_others() -> None:
    current: dict[str, Assignment] = {
        "a": {ORDERS: (0, 1)}, "b": {ORDERS: (2, 3)}, "c": {ORDERS: (4, 5)}}
    result = assign(everyone(["a", "c"], range(6)), current)
    assert_split(result, 6)
    assert set(result["a"][ORDERS]) >= {0, 1} and set(result["c"][ORDERS]) >= {4, 5}
    # from sharing back to splitting: the sharers keep theirs, the freed partition moves
    current = {"a": {ORDERS: (0,)}, "b": {ORDERS: (1,)}, "c": {ORDERS: (0,)}}
    result = assign(everyone(["a", "c"], range(2)), current)
    assert result == {"a": {ORDERS: (0,)}, "c": {ORDERS: (1,)}}


def test_every_member_holding_everything_is_spread() -> None:
    """What the coordinator wrote before it spread partitions: every member holding all."""
    current = {m: {ORDERS: (0, 1, 2, 3)} for m in ("a", "b")}
    result = assign(everyone(["a", "b"], range(4)), current)
    assert result == {"a": {ORDERS: (0, 1)}, "b": {ORDERS: (2, 3)}}


def test_heterogeneous_subscriptions_balance_each_topic_over_its_subscribers() -> None:
    assignable: dict[str, Assignment] = {"a": {ORDERS: (0, 1, 2, 3)},
                                         "b": {ORDERS: (0, 1, 2, 3), PAYMENTS: (0, 1)},
                                         "c": {PAYMENTS: (0, 1)},
                                         "d": {PAYMENTS: (0, 1)}}
    result = assign(assignable, {})
    orders = {m: a for m, a in result.items() if m in ("a", "b")}
    payments = {m: a for m, a in result.items() if m in ("b", "c", "d")}
    assert_split(orders, 4)
    assert_shared(payments, 2, PAYMENTS)
    assert ORDERS not in result["c"] and ORDERS not in result["d"]
    assert PAYMENTS not in result["a"]


def test_only_assignable_partitions_are_assigned() -> None:
    """Uninitialized partitions are not passed in; one a member held that is no longer
    assignable (its share state is gone) is dropped."""
    result = assign(everyone(["a", "b"], (1, 3)), {"a": {ORDERS: (0, 1)}, "b": {ORDERS: (2,)}})
    assert result == {"a": {ORDERS: (1,)}, "b": {ORDERS: (3,)}}
    nothing: dict[str, Assignment] = {"a": {}, "b": {ORDERS: ()}}
    assert assign(nothing, {"a": {ORDERS: (0,)}}) == {"a": {}, "b": {}}


def test_the_same_input_gives_the_same_output() -> None:
    assignable = everyone(["c", "a", "b", "e", "d"], range(3))
    current = {"e": {ORDERS: (2,)}, "a": {ORDERS: (2,)}}
    first = assign(assignable, current)
    again = assign(dict(reversed(list(assignable.items()))), dict(reversed(current.items())))
    assert first == again
    assert_shared(first, 3)


def test_any_holding_gives_a_balanced_assignment_keeping_what_fits() -> None:
    """Whatever members hold (overlapping, stale, uneven), the result is balanced, and a
    member holding only partitions no one else holds, no more than its share, keeps them."""
    draw = random.Random(932)
    for _case in range(500):
        members = [f"m{i}" for i in range(draw.randint(1, 9))]
        partitions = draw.randint(1, 9)
        current: dict[str, Assignment] = {
            m: {ORDERS: tuple(sorted(draw.sample(range(partitions + 2),
                                                 draw.randint(0, partitions))))}
            for m in members if draw.random() < 0.8}
        result = assign(everyone(members, range(partitions)), current)
        if len(members) <= partitions:
            assert_split(result, partitions)
            quota = partitions // len(members)
            alone = Counter(p for a in current.values() for p in a[ORDERS])
            for member, held in current.items():
                mine = [p for p in held[ORDERS] if p < partitions]
                if len(mine) <= quota and all(alone[p] == 1 for p in mine):
                    assert set(mine) <= set(result[member][ORDERS]), (current, result)
        else:
            assert_shared(result, partitions)
