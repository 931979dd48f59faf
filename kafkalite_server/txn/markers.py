"""Writing transaction markers: locally through the replica manager, remotely with
WriteTxnMarkers, until every partition of the transaction has its marker.

The same local write serves the coordinator (partitions led by its own broker) and the
WriteTxnMarkers handler (markers sent by another broker's coordinator). A marker on
``__consumer_offsets`` also settles the group coordinator's pending transactional offsets.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidProducerEpochError,
    TransactionCoordinatorFencedError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster.broker_channel import call
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.txn.coordinator import MarkerRequest, TransactionCoordinator
from kafkalite_server.txn.metadata import TopicPartition

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
REQUEST_TIMEOUT_S = 30.0
FINAL_ERRORS = frozenset({0, UnknownTopicOrPartitionError.errno, InvalidProducerEpochError.errno,
                          TransactionCoordinatorFencedError.errno})
"""Marker outcomes that end the attempt for a partition: written, the partition is gone,
or the marker is stale (a newer epoch or coordinator already ended the transaction)."""


def write_markers_locally(broker: Broker, producer_id: int, producer_epoch: int,
                          coordinator_epoch: int, commit: bool,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """Append the marker to each partition led here; an error code per partition."""
    results: dict[TopicPartition, int] = {}
    for topic, index in partitions:
        try:
            broker.replica_manager.append_marker(topic, index, producer_id, producer_epoch,
                                                 coordinator_epoch, commit)
        except BrokerResponseError as exc:
            if exc.errno not in FINAL_ERRORS:
                log.info("marker for %s-%d: %s", topic, index, exc)
            results[(topic, index)] = exc.errno
            continue
        except Exception:
            log.exception("marker for %s-%d failed", topic, index)
            results[(topic, index)] = UnknownServerError.errno
            continue
        if topic == OFFSETS_TOPIC:
            broker.group_coordinator.txn_offsets.complete(index, producer_id, commit)
        results[(topic, index)] = 0
    return results


class BrokerMarkerSender:
    """The coordinator's :class:`~kafkalite_server.txn.coordinator.MarkerSender`: local
    partitions at once (so a transaction on one broker completes before EndTxn is
    answered), the rest from a background task that retries until done."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.coordinator: TransactionCoordinator | None = None

    def send(self, request: MarkerRequest) -> None:
        remaining = self._write_local(request, set(request.partitions))
        if not remaining:
            self._done(request)
            return
        self._broker.tasks.spawn(self._finish(request, remaining),
                                 f"txn-markers-{request.transactional_id}")

    def _write_local(self, request: MarkerRequest,
                     partitions: set[TopicPartition]) -> set[TopicPartition]:
        cache = self._broker.metadata_cache
        local = {tp for tp in partitions
                 if ((leader := cache.leader_endpoint(*tp)) is not None
                 and leader.node_id == self._broker.node_id)
                 or cache.partition(*tp) is None}
        results = write_markers_locally(self._broker, request.producer_id,
                                        request.producer_epoch, request.coordinator_epoch,
                                        request.commit, local)
        return {tp for tp in partitions if results.get(tp, -1) not in FINAL_ERRORS}

    async def _finish(self, request: MarkerRequest, remaining: set[TopicPartition]) -> None:
        while remaining:
            await asyncio.sleep(RETRY_BACKOFF_S)
            assert self.coordinator is not None
            owner = self.coordinator.partition_for(request.transactional_id)
            if owner not in self.coordinator.owned_partitions():
                return  # the new coordinator completes it after loading
            remaining = self._write_local(request, remaining)
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp in remaining:
                leader = self._broker.metadata_cache.leader_endpoint(*tp)
                if leader is not None and leader.node_id != self._broker.node_id:
                    by_leader[leader.node_id].append(tp)
            for partitions in by_leader.values():
                remaining -= await self._send_remote(request, partitions)
        self._done(request)

    async def _send_remote(self, request: MarkerRequest,
                           partitions: list[TopicPartition]) -> set[TopicPartition]:
        """WriteTxnMarkers to the partitions' leader; returns the partitions finished."""
        leader = self._broker.metadata_cache.leader_endpoint(*partitions[0])
        if leader is None:
            return set()
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in partitions:
            by_topic[topic].append(index)
        body = {"markers": [{
            "producer_id": request.producer_id, "producer_epoch": request.producer_epoch,
            "transaction_result": request.commit, "coordinator_epoch": request.coordinator_epoch,
            "topics": [{"name": t, "partition_indexes": p} for t, p in by_topic.items()]}]}
        try:
            response = await call(leader, ApiKey.WRITE_TXN_MARKERS, 1, body,
                                  client_id=f"txn-coordinator-{self._broker.node_id}",
                                  timeout_s=REQUEST_TIMEOUT_S,
                                  security=self._broker.peer_security)
        except (OSError, TimeoutError, ConnectionError) as exc:
            log.info("WriteTxnMarkers to broker %d: %s", leader.node_id, exc)
            return set()
        finished = set()
        for marker in response["markers"]:
            for topic in marker["topics"]:
                for result in topic["partitions"]:
                    if result["error_code"] in FINAL_ERRORS:
                        finished.add((topic["name"], result["partition_index"]))
        return finished

    def _done(self, request: MarkerRequest) -> None:
        assert self.coordinator is not None
        self.coordinator.markers_written(request.transactional_id, request.producer_id,
                                         request.producer_epoch)
