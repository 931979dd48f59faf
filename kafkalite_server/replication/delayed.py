"""The two delayed operations: Produce with acks=all, and Fetch with min_bytes/max_wait."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from kafkalite_server.log.log import LogOffsetMetadata
from kafkalite_server.replication.partition import Partition
from kafkalite_server.replication.purgatory import DelayedOperation
from kafkalite_server.topic_partition import TopicPartition


class DelayedProduce(DelayedOperation):
    """Done when every appended partition's high watermark passed its last offset (with an
    ISR of one that is at once, but the request still goes through the purgatory), or the
    partition lost leadership (the handler then reports the error)."""

    def __init__(self, timeout_ms: int, required: dict[TopicPartition, int],
                 lookup: Callable[[TopicPartition], Partition | None]) -> None:
        super().__init__(timeout_ms)
        self.required = required
        self.lookup = lookup
        self._waiting: set[TopicPartition] = set(required)
        """The partitions whose high watermark has not yet passed their append."""

    def is_satisfied(self) -> bool:
        self._waiting = {key for key in self._waiting if not self.acknowledged(key)}
        return not self._waiting

    def is_satisfied_after(self, key: Hashable) -> bool:
        if key in self._waiting and self.acknowledged(key):
            self._waiting.discard(key)
        return not self._waiting

    def acknowledged(self, key: TopicPartition) -> bool:
        partition = self.lookup(key)
        return partition is None or partition.high_watermark > self.required[key]


@dataclass(frozen=True, slots=True)
class FetchPosition:
    key: TopicPartition
    fetch_offset: int
    start: LogOffsetMetadata | None
    """Where ``fetch_offset`` lay in the leader's log when the fetch was parked."""


class DelayedFetch(DelayedOperation):
    """Done when the readable bytes (below ``end_of(partition)``: the log end for
    followers, the high watermark or for read_committed the last stable offset for
    consumers) reach ``min_bytes``, or a partition changed in a way the fetcher must hear
    about (leadership, truncation, a new segment, the offset range).

    Bytes are measured between offset metadata (segment, position), as in Kafka's
    DelayedFetch: with the high watermark or the log end as the bound, checking never
    reads the log."""

    def __init__(self, timeout_ms: int, min_bytes: int, positions: list[FetchPosition],
                 lookup: Callable[[TopicPartition], Partition | None],
                 end_of: Callable[[Partition], LogOffsetMetadata]) -> None:
        super().__init__(timeout_ms)
        self.min_bytes = min_bytes
        self.positions = {position.key: position for position in positions}
        self.lookup = lookup
        self.end_of = end_of
        self._available: dict[TopicPartition, int] = {}
        """Readable bytes per partition, as last measured; their sum is :attr:`_total`."""
        self._total = 0

    def is_satisfied(self) -> bool:
        return any(self._measure(key) for key in self.positions) or self._enough()

    def is_satisfied_after(self, key: Hashable) -> bool:
        if key not in self.positions:
            return False
        return self._measure(key) or self._enough()

    def _enough(self) -> bool:
        return self._total >= max(self.min_bytes, 1)

    def _measure(self, key: TopicPartition) -> bool:
        """Re-measures one partition; True if it changed so that the fetch must answer."""
        position = self.positions[key]
        partition = self.lookup(key)
        if partition is None or position.start is None:
            return True
        if position.fetch_offset > partition.log.log_end_offset:
            return True
        end = self.end_of(partition)
        gained = 0
        if end.offset > position.fetch_offset:
            since = end.bytes_since(position.start)
            if since is None:
                return True
            gained = since
        self._total += gained - self._available.get(key, 0)
        self._available[key] = gained
        return False
