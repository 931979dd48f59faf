from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.structs import TopicPartition as KafkaPythonTopicPartition

from kafkalite.consumer.assignors import (
    Assignment,
    StickyAssignor,
    Subscription,
    decode_sticky_user_data,
    encode_sticky_user_data,
)
from kafkalite.errors import ProtocolDecodeError
from kafkalite.structs import TopicPartition

from .assignor_helpers import PartitionCounts, all_partitions, assert_valid

TP = TopicPartition


def owners(result: dict[str, Assignment]) -> dict[TopicPartition, str]:
    return {tp: m for m, a in result.items() for tp in a.partitions}


def counts(result: dict[str, Assignment]) -> list[int]:
    return sorted(len(a.partitions) for a in result.values())


def rejoin(
    result: dict[str, Assignment], topics: list[str], generation: int
) -> dict[str, Subscription]:
    """What each member sends after ``result``: Java-style sticky user data, via the real hooks."""
    subscriptions = {}
    for member, assignment in result.items():
        assignor = StickyAssignor()
        assignor.on_assignment(assignment, generation)
        subscriptions[member] = assignor.metadata(topics)
    return subscriptions


# -- Java's classic sticky scenarios ---------------------------------------------------


def test_fresh_assignment_is_balanced() -> None:
    cluster = PartitionCounts({"t0": 3, "t1": 3})
    members = {m: Subscription(["t0", "t1"]) for m in ("c0", "c1", "c2")}
    result = StickyAssignor().assign(cluster, members)
    assert_valid(cluster, members, result)
    assert counts(result) == [2, 2, 2]


def test_a_joining_member_takes_only_its_share() -> None:
    cluster = PartitionCounts({"t": 9})
    first = StickyAssignor().assign(cluster, {"c0": Subscription(["t"]), "c1": Subscription(["t"])})
    members = rejoin(first, ["t"], generation=1)
    members["c2"] = StickyAssignor().metadata(["t"])
    second = StickyAssignor().assign(cluster, members)
    assert_valid(cluster, members, second)
    assert counts(second) == [3, 3, 3]
    moved = [tp for tp, m in owners(second).items() if owners(first)[tp] != m]
    assert len(moved) == 3 and all(owners(second)[tp] == "c2" for tp in moved)


def test_a_leaving_member_only_frees_its_own_partitions() -> None:
    cluster = PartitionCounts({"t0": 4, "t1": 3})
    topics = ["t0", "t1"]
    first = StickyAssignor().assign(cluster, {m: Subscription(topics) for m in ("a", "b", "c")})
    members = rejoin(first, topics, generation=3)
    del members["b"]
    second = StickyAssignor().assign(cluster, members)
    assert_valid(cluster, members, second)
    for member in ("a", "c"):
        assert set(first[member].partitions) <= set(second[member].partitions)
    assert counts(second) == [3, 4]


def test_ownership_from_owned_partitions_when_there_is_no_user_data() -> None:
    cluster = PartitionCounts({"t": 4})
    members = {
        "a": Subscription(["t"], owned_partitions=[TP("t", 3), TP("t", 2)], generation_id=2),
        "b": Subscription(["t"], owned_partitions=[TP("t", 0)], generation_id=2),
    }
    result = StickyAssignor().assign(cluster, members)
    assert result["a"].partitions == [TP("t", 2), TP("t", 3)]
    assert result["b"].partitions == [TP("t", 0), TP("t", 1)]


def test_higher_generation_wins_a_conflicting_claim_and_a_tie_frees_it() -> None:
    cluster = PartitionCounts({"t": 2})
    members = {
        "a": Subscription(["t"], encode_sticky_user_data([TP("t", 0)], 4)),
        "b": Subscription(["t"], encode_sticky_user_data([TP("t", 0), TP("t", 1)], 5)),
    }
    result = StickyAssignor().assign(cluster, members)
    assert result["b"].partitions[0] == TP("t", 0)  # b's newer claim beats a's
    assert result["a"].partitions == [TP("t", 1)]  # and balance moves one partition over

    tied = {
        "a": Subscription(["t", "u"], encode_sticky_user_data([TP("t", 0)], 5)),
        "b": Subscription(["t"], encode_sticky_user_data([TP("t", 0)], 5)),
        "c": Subscription(["t"], encode_sticky_user_data([TP("t", 1)], 5)),
    }
    result = StickyAssignor().assign(PartitionCounts({"t": 2, "u": 1}), tied)
    # t-0 is nobody's after the tie, so it goes to the least loaded member: b.
    assert owners(result) == {TP("t", 0): "b", TP("t", 1): "c", TP("u", 0): "a"}


def test_claims_on_removed_partitions_or_unsubscribed_topics_are_dropped() -> None:
    cluster = PartitionCounts({"t": 2, "u": 2})
    members = {
        "a": Subscription(["t"], encode_sticky_user_data([TP("t", 5), TP("u", 0), TP("t", 1)], 1)),
        "b": Subscription(["t", "u"], encode_sticky_user_data([], 1)),
    }
    result = StickyAssignor().assign(cluster, members)
    assert_valid(cluster, members, result)
    assert TP("t", 1) in result["a"].partitions


def test_mixed_subscriptions_put_constrained_partitions_where_they_fit() -> None:
    cluster = PartitionCounts({"t0": 2, "t1": 4})
    members = {
        "c0": Subscription(["t0"]),
        "c1": Subscription(["t0", "t1"]),
        "c2": Subscription(["t1"]),
    }
    result = StickyAssignor().assign(cluster, members)
    assert_valid(cluster, members, result)
    assert counts(result) == [2, 2, 2]


def test_garbage_user_data_costs_stickiness_not_the_group() -> None:
    cluster = PartitionCounts({"t": 3})
    members = {
        "a": Subscription(["t"], b"\xff\xff\xff\xff\x01"),
        "b": Subscription(["t"], b"\x00\x00"),
    }
    result = StickyAssignor().assign(cluster, members)
    assert_valid(cluster, members, result)


# -- properties ------------------------------------------------------------------------

TOPICS = ["a", "b", "c"]


@st.composite
def group_with_history(
    draw: st.DrawFn, identical: bool
) -> tuple[PartitionCounts, dict[str, Subscription]]:
    """A group, each member with a previous assignment (no partition owned twice)."""
    cluster = PartitionCounts(draw(st.fixed_dictionaries({t: st.integers(0, 9) for t in TOPICS})))
    ids = draw(
        st.lists(st.text("xyz12", min_size=1, max_size=3), min_size=1, max_size=7, unique=True)
    )
    shared = draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
    topics = {
        m: shared if identical else draw(st.lists(st.sampled_from(TOPICS), unique=True))
        for m in ids
    }
    every_partition = sorted(TP(t, p) for t, n in cluster.counts.items() for p in range(n))
    previous = {tp: draw(st.sampled_from([None, *ids])) for tp in every_partition}
    subscriptions = {}
    for member in ids:
        owned = [tp for tp, owner in previous.items() if owner == member]
        if draw(st.booleans()):
            subscriptions[member] = Subscription(
                sorted(topics[member]), encode_sticky_user_data(owned, 7)
            )
        else:
            subscriptions[member] = Subscription(
                sorted(topics[member]), owned_partitions=owned, generation_id=7
            )
    return cluster, subscriptions


def previous_owner(subscriptions: dict[str, Subscription]) -> dict[TopicPartition, str]:
    result = {}
    for member, subscription in subscriptions.items():
        owned = (
            decode_sticky_user_data(subscription.user_data)[0]
            if subscription.user_data
            else subscription.owned_partitions
        )
        result.update(dict.fromkeys(owned, member))
    return result


@settings(max_examples=200, deadline=None)
@given(group=group_with_history(identical=True))
def test_identical_subscriptions_balanced_with_the_fewest_moves(group) -> None:
    cluster, subscriptions = group
    result = StickyAssignor().assign(cluster, subscriptions)
    assert_valid(cluster, subscriptions, result)
    assert max(counts(result)) - min(counts(result)) <= 1

    # The most partitions that can stay: everyone keeps up to the floor share, and the
    # n % m members allowed one more can be members that owned more than the floor.
    total = len(all_partitions(cluster, subscriptions))
    share, extra = divmod(total, len(subscriptions))
    before = previous_owner(subscriptions)
    owned = Counter(m for tp, m in before.items() if tp in owners(result))
    best = sum(min(owned[m], share) for m in subscriptions)
    best += min(extra, sum(1 for m in subscriptions if owned[m] > share))
    kept = sum(1 for tp, m in owners(result).items() if before.get(tp) == m)
    assert kept == best


@settings(max_examples=200, deadline=None)
@given(group=group_with_history(identical=False))
def test_mixed_subscriptions_valid_and_balanced_in_javas_sense(group) -> None:
    cluster, subscriptions = group
    result = StickyAssignor().assign(cluster, subscriptions)
    assert_valid(cluster, subscriptions, result)
    load = {m: len(a.partitions) for m, a in result.items()}
    for tp, member in owners(result).items():
        for other, subscription in subscriptions.items():
            if tp.topic in subscription.topics:
                assert load[other] >= load[member] - 1, (tp, member, other)


@settings(max_examples=100, deadline=None)
@given(group=group_with_history(identical=True))
def test_reassigning_a_sticky_result_moves_nothing(group) -> None:
    cluster, subscriptions = group
    first = StickyAssignor().assign(cluster, subscriptions)
    topics = next(iter(subscriptions.values())).topics
    second = StickyAssignor().assign(cluster, rejoin(first, topics, generation=8))
    assert second == first


# -- user data compatible with Java, librdkafka and kafka-python ------------------------


def test_metadata_carries_the_last_assignment_in_javas_format() -> None:
    assignor = StickyAssignor()
    assert assignor.metadata(["t"]) == Subscription(["t"], None)  # nothing owned yet
    assignor.on_assignment(Assignment([TP("t", 1), TP("t", 2), TP("u", 0)]), generation=5)
    data = assignor.metadata(["u", "t"]).user_data
    java = StickyAssignorUserData([("t", [1, 2]), ("u", [0])], 5).encode(header=False)
    assert data == java
    assert data == bytes.fromhex(
        "00000002000174000000020000000100000002000175000000010000000000000005"
    )


user_data = st.lists(
    st.tuples(
        st.text(max_size=6), st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=4)
    ),
    max_size=4,
    unique_by=lambda item: item[0],
)


@given(assignment=user_data, generation=st.integers(-(2**31), 2**31 - 1))
def test_user_data_matches_kafka_pythons_encoding_both_ways(assignment, generation: int) -> None:
    partitions = [TP(t, p) for t, ids in assignment for p in ids]
    ours = encode_sticky_user_data(partitions, generation)
    theirs = StickyAssignorUserData(assignment, generation)
    assert ours == theirs.encode(header=False)
    expected = (partitions, generation)
    assert decode_sticky_user_data(ours) == expected
    # kafka-python 3 puts an int16 version in front; a kafkalite leader reads that too.
    assert decode_sticky_user_data(theirs.encode()) == expected


def test_version_0_user_data_has_no_generation() -> None:
    v0 = StickyAssignorUserData([("t", [3])], version=0).encode(header=False)
    assert decode_sticky_user_data(v0) == ([TP("t", 3)], -1)


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",
        b"\x00\x00\x00\x01\x00",
        b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x09",
        b"\x00\x00\x00\x01\x00\x01\xff\x00\x00\x00\x00",
    ],
)
def test_bad_user_data_is_a_typed_error(data: bytes) -> None:
    with pytest.raises(ProtocolDecodeError, match="sticky assignor user data"):
        decode_sticky_user_data(data)


def test_a_kafka_python_sticky_member_keeps_its_partitions_under_a_kafkalite_leader() -> None:
    """kafka-python's real subscription metadata for the sticky protocol, read by our leader."""
    owned = [KafkaPythonTopicPartition("t", 0), KafkaPythonTopicPartition("t", 3)]
    theirs = StickyPartitionAssignor._metadata(["t"], owned, 6)
    members = {
        "kafka-python": Subscription(list(theirs.topics), theirs.user_data.encode()),
        "kafkalite": Subscription(["t"], encode_sticky_user_data([TP("t", 1)], 6)),
    }
    result = StickyAssignor().assign(PartitionCounts({"t": 4}), members)
    assert result["kafka-python"].partitions == [TP("t", 0), TP("t", 3)]
    assert result["kafkalite"].partitions == [TP("t", 1), TP("t", 2)]
