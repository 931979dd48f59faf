"""Follower fetching (KIP-392): which replica the consumer reads each partition from.

A consumer with ``client_rack`` sends its rack in every Fetch; a leader whose broker runs
Kafka's ``RackAwareReplicaSelector`` answers a partition with ``preferred_read_replica``
(and no records) when a replica in that rack is in sync. The consumer then fetches that
partition from the named replica until ``metadata_max_age_ms`` passes or that replica
answers the partition with an error or stops answering, and goes back to the leader: the
Java consumer's rules. Sans-IO: the clock is an argument.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.structs import TopicPartition


class ReadReplicas:
    """See the module docstring."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl_s
        self._clock = clock
        self._preferred: dict[TopicPartition, tuple[int, float]] = {}

    def node_for(self, tp: TopicPartition, leader: int, is_known: Callable[[int], bool]) -> int:
        """The replica to fetch ``tp`` from: the preferred one while it holds, else the
        leader."""
        entry = self._preferred.get(tp)
        if entry is None:
            return leader
        node, expires = entry
        if self._clock() >= expires or not is_known(node):
            self._preferred.pop(tp, None)
            return leader
        return node

    def on_partition(self, tp: TopicPartition, node: int, data: Mapping[str, Any]) -> bool:
        """A Fetch answer for ``tp`` from ``node``: remember a named replica, forget the one
        that just failed. True when the answer is such a failure, which the consumer drops
        and asks the leader again: an OFFSET_OUT_OF_RANGE from a lagging follower must not
        reset the position (the Java consumer's rule)."""
        replica = data.get("preferred_read_replica", -1)
        if replica >= 0:
            self._preferred[tp] = (replica, self._clock() + self._ttl)
        elif data["error_code"] and self._preferred.get(tp, (None,))[0] == node:
            self._preferred.pop(tp, None)
            return True
        return False

    def forget_node(self, node: int) -> None:
        """``node`` did not answer: read its partitions from their leaders again."""
        for tp in [tp for tp, (n, _) in list(self._preferred.items()) if n == node]:
            self._preferred.pop(tp, None)
