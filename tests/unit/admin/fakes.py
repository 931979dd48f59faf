"""A cluster view and a clock the admin driver tests set by hand."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kafkalite.structs import TopicPartition


class FakeCluster:
    """Brokers, a controller and partition leaders; ``version`` counts refreshes."""

    def __init__(self, brokers: Sequence[int] = (0, 1, 2), controller: int | None = 0,
                 leaders: dict[TopicPartition, int | None] | None = None) -> None:
        self.brokers = list(brokers)
        self.controller_id = controller
        self.leaders = dict(leaders or {})
        self.version = 0

    def refreshed(self) -> FakeCluster:
        self.version += 1
        return self

    def broker_ids(self) -> Sequence[int]:
        return sorted(self.brokers)

    def controller(self) -> int | None:
        return self.controller_id

    def partitions_for_topic(self, topic: str) -> Collection[int] | None:
        found = {tp.partition for tp in self.leaders if tp.topic == topic}
        return found or None

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self.leaders.get(tp)
