"""The two delayed operations: Produce with acks=all, and Fetch with min_bytes/max_wait."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafkalite.protocol.errors import OffsetOutOfRangeError
from kafkalite_server.replication.partition import Partition
from kafkalite_server.replication.purgatory import DelayedOperation

TopicPartition = tuple[str, int]


class DelayedProduce(DelayedOperation):
    """Done when every appended partition's high watermark passed its last offset (with an
    ISR of one that is at once, but the request still goes through the purgatory), or the
    partition lost leadership (the handler then reports the error)."""

    def __init__(self, timeout_ms: int, required: dict[TopicPartition, int],
                 lookup: Callable[[TopicPartition], Partition | None]) -> None:
        super().__init__(timeout_ms)
        self.required = required
        self.lookup = lookup

    def is_satisfied(self) -> bool:
        return all(self.acknowledged(key) for key in self.required)

    def acknowledged(self, key: TopicPartition) -> bool:
        partition = self.lookup(key)
        return partition is None or partition.high_watermark > self.required[key]


@dataclass(frozen=True, slots=True)
class FetchPosition:
    key: TopicPartition
    fetch_offset: int
    max_bytes: int


class DelayedFetch(DelayedOperation):
    """Done when the readable bytes (below the high watermark) reach ``min_bytes``, or a
    partition changed in a way the client must hear about (leadership, offset range)."""

    def __init__(self, timeout_ms: int, min_bytes: int, positions: list[FetchPosition],
                 lookup: Callable[[TopicPartition], Partition | None],
                 upper_bound: Callable[[Partition], int] = lambda p: p.high_watermark
                 ) -> None:
        """``upper_bound``: where reads stop (the last stable offset for read_committed)."""
        super().__init__(timeout_ms)
        self.min_bytes = min_bytes
        self.positions = positions
        self.lookup = lookup
        self.upper_bound = upper_bound

    def is_satisfied(self) -> bool:
        available = 0
        for position in self.positions:
            partition = self.lookup(position.key)
            if partition is None:
                return True
            high_watermark = self.upper_bound(partition)
            if position.fetch_offset >= high_watermark:
                if position.fetch_offset > partition.log.log_end_offset:
                    return True
                continue
            if self.min_bytes <= 1:
                return True
            try:
                region = partition.log.read(position.fetch_offset, position.max_bytes,
                                            max_offset=high_watermark)
            except OffsetOutOfRangeError:
                return True
            available += len(region) if region is not None else 0
            if available >= self.min_bytes:
                return True
        return False
