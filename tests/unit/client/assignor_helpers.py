"""Shared helpers for the assignor tests: clusters, subscriptions and readable results."""

from __future__ import annotations

from collections.abc import Mapping

from kafkalite.consumer.assignors import Assignment, Subscription
from kafkalite.structs import TopicPartition


class PartitionCounts:
    """The smallest cluster an assignor needs: topic -> number of partitions."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = dict(counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self.counts[topic])) if topic in self.counts else None


def subs(**topics_by_member: list[str]) -> dict[str, Subscription]:
    return {member: Subscription(sorted(topics)) for member, topics in topics_by_member.items()}


def compact(result: Mapping[str, Assignment]) -> dict[str, list[str]]:
    """{member: ["t0-0", "t0-1", ...]} for readable expectations."""
    return {m: [f"{tp.topic}-{tp.partition}" for tp in a.partitions] for m, a in result.items()}


def all_partitions(
    cluster: PartitionCounts, subscriptions: Mapping[str, Subscription]
) -> set[TopicPartition]:
    topics = {t for s in subscriptions.values() for t in s.topics if t in cluster.counts}
    return {TopicPartition(t, p) for t in topics for p in range(cluster.counts[t])}


def assert_valid(
    cluster: PartitionCounts,
    subscriptions: Mapping[str, Subscription],
    result: Mapping[str, Assignment],
) -> None:
    """Every subscribed partition exactly once, only to a member subscribed to its topic."""
    assert set(result) == set(subscriptions)
    assigned = [tp for a in result.values() for tp in a.partitions]
    assert len(assigned) == len(set(assigned))
    assert set(assigned) == all_partitions(cluster, subscriptions)
    for member, assignment in result.items():
        assert all(tp.topic in subscriptions[member].topics for tp in assignment.partitions)
