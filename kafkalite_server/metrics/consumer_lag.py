"""Consumer lag as kafka-exporter exports it, from the coordinator of each group:
``kafka_consumergroup_current_offset{consumergroup,topic,partition}`` (the committed offset)
and ``kafka_consumergroup_lag`` (the partition's high watermark minus it).

Committed offsets are the group coordinator's own state: each broker exports the groups it
coordinates, so a cluster's series do not overlap. High watermarks come from the leaders:
this broker's replica manager for the partitions it leads, a ListOffsets to the leader for
the others. Those lookups are cached and made at most once per ``REFRESH_INTERVAL_S``,
started by a scrape: the scrape's HTTP thread waits for them (bounded), never the loop,
whose part is the quick reading of state and the sending of requests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import Metric

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.cluster.peer_requests import PeerRequests

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

REFRESH_INTERVAL_S = 5.0
"""The youngest cached high watermarks a scrape asks again for (Prometheus scrapes every
15 s or more by default: each scrape then sees fresh ones)."""

PEER_TIMEOUT_S = 5.0
"""How long a leader may take to answer a scrape's ListOffsets."""

LATEST = -1
LIST_OFFSETS_VERSION = 2

Partition = tuple[str, int]


class ConsumerLag:
    """The lag families of the groups this broker coordinates; lives on the broker's loop."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._peers = PeerRequests(broker.peer_security, f"metrics-{broker.node_id}")
        self._ends: dict[Partition, int] = {}
        self._refreshed_at = float("-inf")
        self._refreshing: asyncio.Future[None] | None = None

    def committed(self) -> dict[str, dict[Partition, int]]:
        """Each coordinated group's committed offsets (read on the loop)."""
        found: dict[str, dict[Partition, int]] = {}
        for group in self._broker.group_coordinator.coordinator.groups():
            if group.offsets:
                found[group.group_id] = {(tp.topic, tp.partition): meta.offset
                                         for tp, meta in group.offsets.items()}
        return found

    async def refresh(self) -> None:
        """Looks the high watermarks of the committed partitions up again, unless that was
        done in the last REFRESH_INTERVAL_S; concurrent scrapes share one lookup."""
        if time.monotonic() - self._refreshed_at < REFRESH_INTERVAL_S:
            return
        if self._refreshing is None:
            self._refreshing = asyncio.ensure_future(self._lookup())
        try:
            await asyncio.shield(self._refreshing)
        finally:
            if self._refreshing is not None and self._refreshing.done():
                self._refreshing = None

    async def _lookup(self) -> None:
        partitions = {p for offsets in self.committed().values() for p in offsets}
        ends: dict[Partition, int] = {}
        remote: dict[int, list[Partition]] = defaultdict(list)
        manager = self._broker.replica_manager
        for topic, index in sorted(partitions):
            state = self._broker.metadata_cache.partition(topic, index)
            if state is None or state.leader < 0:
                continue
            if state.leader != self._broker.node_id:
                remote[state.leader].append((topic, index))
                continue
            try:
                ends[(topic, index)] = manager.leader_partition(topic, index).high_watermark
            except BrokerResponseError:
                continue
        answers = await asyncio.gather(*(self._ask(node, asked)
                                          for node, asked in remote.items()))
        for answer in answers:
            ends.update(answer)
        self._ends = ends
        self._refreshed_at = time.monotonic()

    async def _ask(self, node: int, partitions: list[Partition]) -> dict[Partition, int]:
        """The high watermarks ``node`` answers for the partitions it leads; {} on failure."""
        peer = self._broker.metadata_cache.brokers.get(node)
        if peer is None:
            return {}
        topics: dict[str, list[int]] = defaultdict(list)
        for topic, index in partitions:
            topics[topic].append(index)
        body = {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": i, "timestamp": LATEST}
                                           for i in indexes]}
            for topic, indexes in topics.items()]}
        try:
            answer = await self._peers.call(peer, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION,
                                            body, timeout_s=PEER_TIMEOUT_S)
        except (OSError, TimeoutError, KafkaError) as exc:
            log.info("consumer lag: ListOffsets to broker %d: %s", node, exc)
            return {}
        return {(t["name"], p["partition_index"]): p["offset"]
                for t in answer["topics"] for p in t["partitions"] if not p["error_code"]}

    def families(self) -> list[Metric]:
        """The two families from the committed offsets now and the cached high watermarks
        (a partition whose leader did not answer has an offset but no lag)."""
        current = Metric("kafka_consumergroup_current_offset",
                         "The group's committed offset of the partition.", "gauge")
        lag = Metric("kafka_consumergroup_lag",
                     "The partition's high watermark minus the group's committed offset.",
                     "gauge")
        for group_id, offsets in sorted(self.committed().items()):
            for (topic, index), offset in sorted(offsets.items()):
                labels = {"consumergroup": group_id, "topic": topic, "partition": str(index)}
                current.add_sample(current.name, labels, offset)
                end = self._ends.get((topic, index))
                if end is not None:
                    lag.add_sample(lag.name, labels, max(end - offset, 0))
        return [current, lag]

    def close(self) -> None:
        self._peers.close()
