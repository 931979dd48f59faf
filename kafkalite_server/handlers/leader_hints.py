"""KIP-951's leader hints: a Produce (v10+) or Fetch (v16+) answer that refuses a partition
because this broker does not lead it names the partition's current leader and epoch from
this broker's metadata cache, and lists that leader's endpoint on the client's listener,
so the client redirects at once instead of refreshing its metadata first (as Kafka's
``KafkaApis.getCurrentLeader``). A partition with no known leader gets no hint."""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import FencedLeaderEpochError, NotLeaderOrFollowerError
from kafkalite_server.cluster.messages import NO_LEADER
from kafkalite_server.handlers.registry import RequestContext

PRODUCE_HINTS_SINCE = 10
FETCH_HINTS_SINCE = 16
PRODUCE_REDIRECTS = frozenset({NotLeaderOrFollowerError.errno})
FETCH_REDIRECTS = frozenset({NotLeaderOrFollowerError.errno, FencedLeaderEpochError.errno})
"""The partition errors that carry a hint: Kafka adds FENCED_LEADER_EPOCH for fetchers,
whose epoch says they know an older leader."""


class LeaderHints:
    """The hints of one response: ``current_leader`` per refused partition, and the
    ``node_endpoints`` of every leader named."""

    def __init__(self, ctx: RequestContext) -> None:
        self._cache = ctx.broker.metadata_cache
        self._listener = ctx.listener
        self._endpoints: dict[int, dict[str, Any]] = {}

    def current_leader(self, topic: str, partition: int) -> dict[str, int]:
        state = self._cache.partition(topic, partition)
        if state is None or state.leader == NO_LEADER:
            return {"leader_id": NO_LEADER, "leader_epoch": -1}
        endpoint = self._cache.brokers.get(state.leader)
        if endpoint is not None:
            endpoint = endpoint.on(self._listener)
            self._endpoints[endpoint.node_id] = {"node_id": endpoint.node_id,
                                                 "host": endpoint.host, "port": endpoint.port,
                                                 "rack": endpoint.rack}
        return {"leader_id": state.leader, "leader_epoch": state.leader_epoch}

    def node_endpoints(self) -> list[dict[str, Any]]:
        return [self._endpoints[node] for node in sorted(self._endpoints)]
