from collections import namedtuple
from typing import Any

import pytest
from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AiokafkaRange
from aiokafka.coordinator.assignors.roundrobin import (
    RoundRobinPartitionAssignor as AiokafkaRoundRobin,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from kafkalite.consumer.assignors import (
    Assignment,
    Assignor,
    PartitionLookup,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    resolve_assignors,
)
from kafkalite.errors import ConfigError
from kafkalite.structs import TopicPartition

from .assignor_helpers import PartitionCounts, assert_valid, compact, subs
from .metadata_bodies import cluster_with

# -- seed 004's worked examples ----------------------------------------------------------


def test_range_10_partitions_over_3_consumers_is_4_3_3() -> None:
    result = RangeAssignor().assign(
        PartitionCounts({"T1": 10}), subs(C1=["T1"], C2=["T1"], C3=["T1"])
    )
    assert compact(result) == {
        "C1": ["T1-0", "T1-1", "T1-2", "T1-3"],
        "C2": ["T1-4", "T1-5", "T1-6"],
        "C3": ["T1-7", "T1-8", "T1-9"],
    }


def test_range_11_partitions_over_3_consumers_is_4_4_3() -> None:
    result = RangeAssignor().assign(
        PartitionCounts({"T1": 11}), subs(C1=["T1"], C2=["T1"], C3=["T1"])
    )
    assert [len(a.partitions) for a in result.values()] == [4, 4, 3]
    assert compact(result)["C2"] == ["T1-4", "T1-5", "T1-6", "T1-7"]


def test_range_two_topics_gives_the_first_consumer_both_extras() -> None:
    both = ["T1", "T2"]
    result = RangeAssignor().assign(
        PartitionCounts({"T1": 10, "T2": 10}), subs(C1=both, C2=both, C3=both)
    )
    assert compact(result) == {
        "C1": ["T1-0", "T1-1", "T1-2", "T1-3", "T2-0", "T2-1", "T2-2", "T2-3"],
        "C2": ["T1-4", "T1-5", "T1-6", "T2-4", "T2-5", "T2-6"],
        "C3": ["T1-7", "T1-8", "T1-9", "T2-7", "T2-8", "T2-9"],
    }


def test_round_robin_deals_sorted_partitions_in_a_circle() -> None:
    """The seed's example with 10 partitions and 4 consumer threads (sorted, not hashed)."""
    members = subs(**{"C1-0": ["T1"], "C1-1": ["T1"], "C2-0": ["T1"], "C2-1": ["T1"]})
    result = RoundRobinAssignor().assign(PartitionCounts({"T1": 10}), members)
    assert compact(result) == {
        "C1-0": ["T1-0", "T1-4", "T1-8"],
        "C1-1": ["T1-1", "T1-5", "T1-9"],
        "C2-0": ["T1-2", "T1-6"],
        "C2-1": ["T1-3", "T1-7"],
    }


# -- classic cases from the Java client's assignor tests --------------------------------


def test_range_two_members_two_topics_three_partitions_each() -> None:
    both = ["t0", "t1"]
    result = RangeAssignor().assign(PartitionCounts({"t0": 3, "t1": 3}), subs(c0=both, c1=both))
    assert compact(result) == {"c0": ["t0-0", "t0-1", "t1-0", "t1-1"], "c1": ["t0-2", "t1-2"]}


def test_round_robin_two_members_two_topics_three_partitions_each() -> None:
    both = ["t0", "t1"]
    result = RoundRobinAssignor().assign(
        PartitionCounts({"t0": 3, "t1": 3}), subs(c0=both, c1=both)
    )
    assert compact(result) == {"c0": ["t0-0", "t0-2", "t1-1"], "c1": ["t0-1", "t1-0", "t1-2"]}


def test_round_robin_mixed_subscriptions_skips_unsubscribed_members() -> None:
    cluster = PartitionCounts({"t0": 1, "t1": 2, "t2": 3})
    members = subs(c0=["t0"], c1=["t0", "t1"], c2=["t0", "t1", "t2"])
    assert compact(RoundRobinAssignor().assign(cluster, members)) == {
        "c0": ["t0-0"],
        "c1": ["t1-0"],
        "c2": ["t1-1", "t2-0", "t2-1", "t2-2"],
    }


def test_range_mixed_subscriptions_only_splits_among_subscribers() -> None:
    cluster = PartitionCounts({"t0": 3, "t1": 2})
    members = subs(c0=["t0"], c1=["t0", "t1"], c2=["t1"])
    assert compact(RangeAssignor().assign(cluster, members)) == {
        "c0": ["t0-0", "t0-1"],
        "c1": ["t0-2", "t1-0"],
        "c2": ["t1-1"],
    }


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor(), StickyAssignor()])
def test_more_members_than_partitions_leaves_some_empty(assignor: Assignor) -> None:
    cluster = PartitionCounts({"t": 2})
    members = subs(a=["t"], b=["t"], c=["t"], d=["t"])
    result = assignor.assign(cluster, members)
    assert_valid(cluster, members, result)
    assert sorted(len(a.partitions) for a in result.values()) == [0, 0, 1, 1]


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor(), StickyAssignor()])
def test_member_without_topics_and_unknown_topics(assignor: Assignor) -> None:
    cluster = PartitionCounts({"t": 3})
    members = subs(a=["t", "not-yet-created"], b=[], c=["t"])
    result = assignor.assign(cluster, members)
    assert_valid(cluster, members, result)
    assert result["b"] == Assignment([])


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor(), StickyAssignor()])
def test_no_members_and_no_topics(assignor: Assignor) -> None:
    assert assignor.assign(PartitionCounts({}), {}) == {}
    assert assignor.assign(PartitionCounts({}), subs(a=["t"])) == {"a": Assignment([])}


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor()])
def test_static_members_come_first_by_instance_id(assignor: Assignor) -> None:
    members = {
        "a-dynamic": Subscription(["t"]),
        "z-member": Subscription(["t"], group_instance_id="instance-1"),
        "m-member": Subscription(["t"], group_instance_id="instance-2"),
    }
    result = assignor.assign(PartitionCounts({"t": 3}), members)
    assert [result[m].partitions for m in ("z-member", "m-member", "a-dynamic")] == [
        [TopicPartition("t", 0)],
        [TopicPartition("t", 1)],
        [TopicPartition("t", 2)],
    ]


def test_assignors_work_on_cluster_metadata() -> None:
    cluster = cluster_with({"t": 4, "u": 1})
    result = RoundRobinAssignor().assign(cluster, subs(a=["t", "u"], b=["t"]))
    assert compact(result) == {"a": ["t-0", "t-2", "u-0"], "b": ["t-1", "t-3"]}


# -- kafka-python's and aiokafka's assignors as oracles ---------------------------------

KafkaPythonMember = namedtuple("KafkaPythonMember", "member_id group_instance_id metadata")
KafkaPythonSubscription = namedtuple("KafkaPythonSubscription", "topics")
AiokafkaSubscription = namedtuple("AiokafkaSubscription", "subscription")

TOPICS = ["a", "b", "c", "d"]
topic_lists = st.lists(st.sampled_from([*TOPICS, "unknown"]), max_size=4, unique=True)
member_ids = st.text("mnopq0123", min_size=1, max_size=4)
partition_counts = st.fixed_dictionaries({t: st.integers(0, 12) for t in TOPICS})


def kafka_python_assign(
    oracle: Any, cluster: PartitionCounts, members: dict[str, list[str]]
) -> Any:
    group = [KafkaPythonMember(m, None, KafkaPythonSubscription(t)) for m, t in members.items()]
    return oracle.assign(cluster, group)


def aiokafka_assign(oracle: Any, cluster: PartitionCounts, members: dict[str, list[str]]) -> Any:
    return oracle.assign(cluster, {m: AiokafkaSubscription(t) for m, t in members.items()})


def assert_same_as_oracle(
    ours: Assignor, oracle_result: Any, cluster: PartitionCounts, members: dict[str, list[str]]
) -> None:
    subscriptions = {m: Subscription(t) for m, t in members.items()}
    result = ours.assign(cluster, subscriptions)
    assert_valid(cluster, subscriptions, result)
    expected = {m: sorted(tuple(tp) for tp in a.partitions()) for m, a in oracle_result.items()}
    assert {m: [tuple(tp) for tp in a.partitions] for m, a in result.items()} == expected


def known(counts: dict[str, int]) -> PartitionCounts:
    return PartitionCounts({t: n for t, n in counts.items() if n})


@settings(max_examples=150, deadline=None)
@given(
    counts=partition_counts,
    members=st.dictionaries(member_ids, topic_lists, min_size=1, max_size=7),
)
def test_range_same_as_kafka_python_and_aiokafka(
    counts: dict[str, int], members: dict[str, list[str]]
) -> None:
    cluster = known(counts)
    assert_same_as_oracle(
        RangeAssignor(),
        kafka_python_assign(RangePartitionAssignor, cluster, members),
        cluster,
        members,
    )
    assert_same_as_oracle(
        RangeAssignor(), aiokafka_assign(AiokafkaRange, cluster, members), cluster, members
    )


@settings(max_examples=150, deadline=None)
@given(
    counts=partition_counts,
    members=st.dictionaries(member_ids, topic_lists, min_size=1, max_size=7),
)
def test_round_robin_same_as_aiokafka(
    counts: dict[str, int], members: dict[str, list[str]]
) -> None:
    cluster = known(counts)
    assert_same_as_oracle(
        RoundRobinAssignor(),
        aiokafka_assign(AiokafkaRoundRobin, cluster, members),
        cluster,
        members,
    )


@settings(max_examples=100, deadline=None)
@given(counts=partition_counts, topics=topic_lists, ids=st.sets(member_ids, min_size=1, max_size=7))
def test_round_robin_same_as_kafka_python_for_identical_subscriptions(
    counts: dict[str, int], topics: list[str], ids: set[str]
) -> None:
    """Identical subscriptions only: kafka-python 3.0.12 crashes (KeyError) when it has to
    skip a member that is not subscribed to a topic, so mixed groups use aiokafka above."""
    cluster, members = known(counts), dict.fromkeys(ids, topics)
    assert_same_as_oracle(
        RoundRobinAssignor(),
        kafka_python_assign(RoundRobinPartitionAssignor, cluster, members),
        cluster,
        members,
    )


@settings(max_examples=100, deadline=None)
@given(counts=st.lists(st.integers(1, 20), min_size=1, max_size=3), members=st.integers(1, 8))
def test_round_robin_balances_identical_subscriptions(counts: list[int], members: int) -> None:
    topics = {f"t{i}": n for i, n in enumerate(counts)}
    subscriptions = {f"m{i}": Subscription(list(topics)) for i in range(members)}
    result = RoundRobinAssignor().assign(PartitionCounts(topics), subscriptions)
    sizes = [len(a.partitions) for a in result.values()]
    assert max(sizes) - min(sizes) <= 1


# -- the user-facing assignor API ------------------------------------------------------


class LabelledAssignor(RoundRobinAssignor):
    """A custom assignor that sends structured user data."""

    name = "labelled"

    def __init__(self, label: str) -> None:
        self.label = label
        self.received: list[tuple[Assignment, int]] = []

    def user_data(self, topics: list[str]) -> Any:
        return {"label": self.label, "topics": topics, "raw": b"\x00\xff"}

    def assign(
        self, cluster: PartitionLookup, subscriptions: dict[str, Subscription]
    ) -> dict[str, Assignment]:
        result = super().assign(cluster, subscriptions)
        labels = {m: self.decode_user_data(s.user_data)["label"] for m, s in subscriptions.items()}
        return {
            m: Assignment(a.partitions, self.encode_user_data(labels[m])) for m, a in result.items()
        }

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self.received.append((assignment, generation))


def test_metadata_sorts_topics_and_msgpack_encodes_user_data() -> None:
    assignor = LabelledAssignor("blue")
    subscription = assignor.metadata(["b", "a", "b"])
    assert subscription.topics == ["a", "b"]
    assert assignor.decode_user_data(subscription.user_data) == {
        "label": "blue",
        "topics": ["a", "b"],
        "raw": b"\x00\xff",
    }
    result = assignor.assign(PartitionCounts({"a": 2, "b": 1}), {"m1": subscription})
    assert assignor.decode_user_data(result["m1"].user_data) == "blue"


def test_default_metadata_has_no_user_data() -> None:
    assert RangeAssignor().metadata({"y", "x"}) == Subscription(["x", "y"], None)
    assert RangeAssignor().decode_user_data(b"") is None  # librdkafka sends empty, not null


def test_assignor_protocol_names_and_versions() -> None:
    assert [cls.name for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor)] == [
        "range",
        "roundrobin",
        "sticky",
    ]
    assert all(cls.version >= 1 for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor))


def test_resolve_assignors_accepts_names_classes_instances_in_order() -> None:
    custom = LabelledAssignor("x")
    resolved = resolve_assignors(["sticky", RangeAssignor, custom])
    assert [type(a) for a in resolved] == [StickyAssignor, RangeAssignor, LabelledAssignor]
    assert resolved[2] is custom
    assert [type(a) for a in resolve_assignors("roundrobin")] == [RoundRobinAssignor]
    assert [type(a) for a in resolve_assignors((RangeAssignor,))] == [RangeAssignor]


class Nameless(RangeAssignor):
    name = ""


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("uniform", "unknown assignor"),
        ([], "at least one"),
        (42, "expected an Assignor"),
        ([str], "expected an Assignor"),
        (["range", RangeAssignor], "duplicate"),
        (Nameless, "no protocol name"),
    ],
)
def test_resolve_assignors_rejects_bad_values(value: object, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        resolve_assignors(value)
    assert info.value.key == "partition_assignment_strategy"
