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
from kafkalite_server.cluster.peer_requests import PeerRequests
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.txn.coordinator import MarkerRequest, TransactionCoordinator
from kafkalite_server.txn.metadata import TopicPartition
from kafkalite_server.txn.peers import ask_peer

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker
    from kafkalite_server.coordinator.runtime import CoordinatorRuntime
    from kafkalite_server.services import BrokerServices

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
MARKER_REPLICATION_TIMEOUT_MS = 10_000
"""How long WriteTxnMarkers waits for a marker to reach the partition's ISR (shorter than
the coordinator's wait for its answer, ``peers.REQUEST_TIMEOUT_S``)."""
FINAL_ERRORS = frozenset({0, UnknownTopicOrPartitionError.errno, InvalidProducerEpochError.errno,
                          TransactionCoordinatorFencedError.errno})
"""Marker outcomes that end the attempt for a partition: written, the partition is gone,
or the marker is stale (a newer epoch or coordinator already ended the transaction)."""


def write_markers_locally(broker: BrokerServices, producer_id: int, producer_epoch: int,
                          coordinator_epoch: int, commit: bool,
                          partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, tuple[int, int]]:
    """Append the marker to each partition led here: (error code, the marker's offset or
    -1) per partition. The marker is not yet in the ISR (see :func:`write_markers`)."""
    results: dict[TopicPartition, tuple[int, int]] = {}
    for topic, index in partitions:
        try:
            info = broker.replica_manager.append_marker(topic, index, producer_id,
                                                        producer_epoch, coordinator_epoch,
                                                        commit)
        except BrokerResponseError as exc:
            if exc.errno not in FINAL_ERRORS:
                log.info("marker for %s-%d: %s", topic, index, exc)
            results[(topic, index)] = (exc.errno, -1)
            continue
        except Exception:
            log.exception("marker for %s-%d failed", topic, index)
            results[(topic, index)] = (UnknownServerError.errno, -1)
            continue
        if topic == OFFSETS_TOPIC:
            broker.group_coordinator.txn_offsets.complete(index, producer_id, commit)
        broker.txn_coordinator.verifier.marker_written((topic, index), producer_id)
        results[(topic, index)] = (0, info.last_offset)
    return results


async def write_markers(broker: BrokerServices, producer_id: int, producer_epoch: int,
                        coordinator_epoch: int, commit: bool,
                        partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """WriteTxnMarkers' work: append the markers, then wait until the ISR has them (Kafka
    appends markers with acks=all), so a marker the coordinator counts as written survives
    the loss of this leader. An error code per partition."""
    results = write_markers_locally(broker, producer_id, producer_epoch, coordinator_epoch,
                                    commit, partitions)
    written = {tp: offset for tp, (error, offset) in results.items() if error == 0}
    replicated = await broker.replica_manager.await_replication(
        written, MARKER_REPLICATION_TIMEOUT_MS) if written else {}
    return {tp: replicated.get(tp, error) for tp, (error, _) in results.items()}


class BrokerMarkerSender:
    """The coordinator's :class:`~kafkalite_server.txn.coordinator.MarkerSender`.

    Markers go out only once the PrepareCommit/PrepareAbort record is in the ISR of the
    id's ``__transaction_state`` partition: a coordinator that fails before that leaves
    its successor a transaction still Ongoing, never one already half-committed. A
    partition counts as done when its marker is in that partition's ISR. When everything
    is replicated at once (one replica) the transaction completes before EndTxn is
    answered; otherwise a background task waits, retries and sends WriteTxnMarkers to the
    leaders of the other partitions until every partition is done, or until this broker
    stops coordinating the id (its successor re-sends the markers after loading)."""

    def __init__(self, broker: Broker, state: CoordinatorRuntime) -> None:
        self._broker = broker
        self.peers = PeerRequests(broker.peer_security, f"txn-coordinator-{broker.node_id}")
        self._state = state
        self.coordinator: TransactionCoordinator | None = None

    def send(self, request: MarkerRequest) -> None:
        remaining = set(request.partitions)
        unacknowledged: dict[TopicPartition, int] = {}
        if self._state.committed_now(self._state_partition(request)):
            remaining, unacknowledged = self._write_local(request, remaining)
            if not remaining and not unacknowledged:
                self._done(request)
                return
        self._broker.tasks.spawn(self._finish(request, remaining, unacknowledged),
                                 f"txn-markers-{request.transactional_id}")

    def _state_partition(self, request: MarkerRequest) -> int:
        assert self.coordinator is not None
        return self.coordinator.partition_for(request.transactional_id)

    def _coordinating(self, request: MarkerRequest) -> bool:
        assert self.coordinator is not None
        return self.coordinator.ownership.is_owned(self._state_partition(request))

    def _write_local(self, request: MarkerRequest, partitions: set[TopicPartition]
                     ) -> tuple[set[TopicPartition], dict[TopicPartition, int]]:
        """Markers for the partitions led here (and unknown ones, which answer
        UNKNOWN_TOPIC_OR_PARTITION): the partitions still to do, and the markers written
        but not yet in their ISR, by offset."""
        cache = self._broker.metadata_cache
        local = {tp for tp in partitions
                 if ((leader := cache.leader_endpoint(*tp)) is not None
                 and leader.node_id == self._broker.node_id)
                 or cache.partition(*tp) is None}
        results = write_markers_locally(self._broker, request.producer_id,
                                        request.producer_epoch, request.coordinator_epoch,
                                        request.commit, local)
        unacknowledged = {tp: offset for tp, (error, offset) in results.items()
                          if error == 0 and not self._replicated_now(tp, offset)}
        remaining = {tp for tp in partitions
                     if results.get(tp, (-1, -1))[0] not in FINAL_ERRORS}
        return remaining, unacknowledged

    def _replicated_now(self, tp: TopicPartition, offset: int) -> bool:
        try:
            return self._broker.replica_manager.leader_partition(*tp).high_watermark > offset
        except BrokerResponseError:
            return False

    async def _finish(self, request: MarkerRequest, remaining: set[TopicPartition],
                      unacknowledged: dict[TopicPartition, int]) -> None:
        while await self._state.partition_committed(self._state_partition(request)):
            if not self._coordinating(request):
                return
            await asyncio.sleep(RETRY_BACKOFF_S)
        while remaining or unacknowledged:
            if not self._coordinating(request):
                return  # the new coordinator completes it after loading
            if unacknowledged:
                acknowledged = await self._broker.replica_manager.await_replication(
                    unacknowledged, MARKER_REPLICATION_TIMEOUT_MS)
                remaining |= {tp for tp, error in acknowledged.items() if error}
                unacknowledged = {}
                continue
            remaining, unacknowledged = self._write_local(request, remaining)
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp in remaining:
                leader = self._broker.metadata_cache.leader_endpoint(*tp)
                if leader is not None and leader.node_id != self._broker.node_id:
                    by_leader[leader.node_id].append(tp)
            for partitions in by_leader.values():
                remaining -= await self._send_remote(request, partitions)
            if remaining:
                await asyncio.sleep(RETRY_BACKOFF_S)
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
        response = await ask_peer(self.peers, leader, ApiKey.WRITE_TXN_MARKERS, 1, body)
        if response is None:
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
