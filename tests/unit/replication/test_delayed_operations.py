"""The delayed Produce and Fetch on many partitions: an event for one partition looks at
that partition alone, and what earlier events measured still counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkalite_server.log.log import LogOffsetMetadata
from kafkalite_server.replication.delayed import DelayedFetch, DelayedProduce, FetchPosition

PARTITIONS = [("t", index) for index in range(500)]


@dataclass
class FakeLog:
    log_end_offset: int = 0


@dataclass
class FakePartition:
    end: LogOffsetMetadata = field(default_factory=lambda: LogOffsetMetadata(0, 0, 0))
    high_watermark: int = 0
    log: FakeLog = field(default_factory=FakeLog)


class Counting(dict[Any, FakePartition]):
    """The partitions, counting how often the operation looks one up."""

    lookups = 0

    def lookup(self, key: Any) -> FakePartition | None:
        self.lookups += 1
        return self.get(key)


def _fetch(partitions: Counting, min_bytes: int) -> DelayedFetch:
    start = LogOffsetMetadata(0, 0, 0)
    positions = [FetchPosition(key, 0, start) for key in partitions]
    return DelayedFetch(500, min_bytes, positions, partitions.lookup,  # type: ignore[arg-type]
                        lambda partition: partition.end)  # type: ignore[attr-defined]


def test_a_fetch_adds_up_bytes_across_events_each_looking_at_one_partition() -> None:
    partitions = Counting({key: FakePartition() for key in PARTITIONS})
    fetch = _fetch(partitions, min_bytes=100)
    assert not fetch.is_satisfied()
    partitions.lookups = 0
    for key in PARTITIONS[:2]:
        partitions[key].end = LogOffsetMetadata(1, 0, 60)
        partitions[key].log.log_end_offset = 1
    assert not fetch.is_satisfied_after(PARTITIONS[0])  # 60 bytes of 100
    assert fetch.is_satisfied_after(PARTITIONS[1])  # 120
    assert partitions.lookups == 2


def test_a_partition_that_moved_away_answers_the_fetch_at_once() -> None:
    partitions = Counting({key: FakePartition() for key in PARTITIONS})
    fetch = _fetch(partitions, min_bytes=1_000_000)
    assert not fetch.is_satisfied()
    del partitions[PARTITIONS[7]]  # no longer led here
    assert not fetch.is_satisfied_after(("other", 0))
    assert fetch.is_satisfied_after(PARTITIONS[7])


def test_a_produce_counts_each_acknowledged_partition_once() -> None:
    partitions = Counting({key: FakePartition() for key in PARTITIONS})
    produce = DelayedProduce(500, dict.fromkeys(PARTITIONS, 0),
                             partitions.lookup)  # type: ignore[arg-type]
    assert not produce.is_satisfied()
    partitions.lookups = 0
    for key in PARTITIONS[:-1]:
        partitions[key].high_watermark = 1
        assert not produce.is_satisfied_after(key)
    partitions[PARTITIONS[-1]].high_watermark = 1
    assert produce.is_satisfied_after(PARTITIONS[-1])
    assert partitions.lookups == len(PARTITIONS)
