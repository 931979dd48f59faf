"""The cooperative-sticky assignor (KIP-429): a partition that moves is left unassigned
for one round, so its owner revokes it before anyone else gets it."""

from __future__ import annotations

from kafkalite.consumer.assignors import (
    CooperativeStickyAssignor,
    Subscription,
    resolve_assignors,
)
from kafkalite.structs import TopicPartition


class Six:
    def partitions_for_topic(self, topic: str) -> list[int] | None:
        return list(range(6)) if topic == "t" else None


def tps(*partitions: int) -> list[TopicPartition]:
    return [TopicPartition("t", p) for p in partitions]


def test_a_moving_partition_waits_one_round_for_its_owner_to_revoke_it() -> None:
    assignor = CooperativeStickyAssignor()
    first = assignor.assign(Six(), {
        "a": Subscription(["t"], owned_partitions=tps(0, 1, 2, 3, 4, 5), generation_id=1),
        "b": Subscription(["t"])})
    assert sorted(first["a"].partitions) == tps(0, 1, 2)  # keeps three, gives up three
    assert first["b"].partitions == []  # a still owns them: nothing for b yet
    second = assignor.assign(Six(), {
        "a": Subscription(["t"], owned_partitions=tps(0, 1, 2), generation_id=2),
        "b": Subscription(["t"], owned_partitions=[], generation_id=2)})
    assert sorted(second["a"].partitions) == tps(0, 1, 2)
    assert sorted(second["b"].partitions) == tps(3, 4, 5)


def test_it_is_chosen_by_name() -> None:
    [assignor] = resolve_assignors("cooperative-sticky")
    assert isinstance(assignor, CooperativeStickyAssignor) and assignor.cooperative
