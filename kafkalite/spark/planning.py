"""Offset-range planning: which records each Spark task reads. Pure functions, no I/O.

A range is half-open, ``[start, end)``, in one topic-partition. Batch reads plan one range per
partition (cut to at most ``maxRecordsPerPartition`` records, split further to reach
``minPartitions``); streaming micro-batches plan the ranges between two checkpointed offset
maps, capped by ``maxOffsetsPerTrigger``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise

from kafkalite.structs import TopicPartition


@dataclass(frozen=True, order=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def ranges_between(start: Mapping[TopicPartition, int],
                   end: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """The non-empty ranges from ``start`` to ``end`` for every partition in ``end``.

    A partition missing from ``start`` is new (it appeared after the query started) and is
    read from offset 0, as Spark does; the reader then reports any data already deleted.
    """
    ranges = [OffsetRange(tp.topic, tp.partition, start.get(tp, 0), offset)
              for tp, offset in end.items()]
    return sorted(r for r in ranges if r.size > 0)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None,
                 max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """Split ranges so no piece holds more than ``max_records_per_partition`` records, then,
    if that leaves fewer than ``min_partitions`` pieces, split again to reach it (as Spark's
    maxRecordsPerPartition and minPartitions combine)."""
    if max_records_per_partition:
        ranges = [piece for r in ranges
                  for piece in _cut(r, -(-r.size // max_records_per_partition))]
    total = sum(r.size for r in ranges)
    if not min_partitions or len(ranges) >= min_partitions or total == 0:
        return ranges
    # Each range gets a share of the pieces proportional to its size (at least one), cut
    # into pieces of nearly equal size, so no task reads far more than the others.
    return [piece for r in ranges
            for piece in _cut(r, max(1, -(-r.size * min_partitions // total)))]


def _cut(r: OffsetRange, count: int) -> list[OffsetRange]:
    """``r`` in ``count`` nearly equal pieces (never more pieces than offsets)."""
    count = min(r.size, max(1, count))
    bounds = [r.start + r.size * i // count for i in range(count + 1)]
    return [OffsetRange(r.topic, r.partition, lo, hi) for lo, hi in pairwise(bounds)]


def backlog(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> int:
    """Offsets between ``start`` and ``latest`` (a new partition counts from 0)."""
    return sum(max(0, end - start.get(tp, 0)) for tp, end in latest.items())


def cap_offsets(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                max_records: int | None) -> dict[TopicPartition, int]:
    """End offsets at most ``max_records`` past ``start`` in total, shared by backlog size.

    Each partition gets ``max_records * its backlog / total backlog`` rounded down, and the
    records left over by rounding go one each to the partitions with the largest remainders,
    so a micro-batch reads exactly ``min(max_records, total backlog)`` offsets.
    """
    backlog = {tp: max(0, end - start.get(tp, 0)) for tp, end in latest.items()}
    total = sum(backlog.values())
    if max_records is None or total <= max_records:
        return dict(latest)
    shares = {tp: divmod(lag * max_records, total) for tp, lag in backlog.items()}
    leftover = max_records - sum(whole for whole, _ in shares.values())
    by_remainder = sorted(shares, key=lambda tp: (-shares[tp][1], tp))
    bonus = set(by_remainder[:leftover])
    return {tp: start.get(tp, 0) + shares[tp][0] + (tp in bonus) for tp in latest}
