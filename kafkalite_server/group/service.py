"""The group coordinator inside a running broker.

It ties the sans-IO :class:`GroupCoordinator` to the broker: timers on the event loop,
storage on ``__consumer_offsets``, and ownership that follows leadership of the offsets
partitions: the replica manager calls :meth:`on_become_leader` / :meth:`on_resign` (Kafka's
onLeadershipChange), so loading starts the moment the controller makes this broker leader.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from kafkalite.protocol.errors import (
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    TopicAlreadyExistsError,
)
from kafkalite_server.cluster.cluster_node import ClusterMembership
from kafkalite_server.cluster.image import BrokerEndpoint
from kafkalite_server.cluster.internal_topics import internal_replication_factor
from kafkalite_server.group.config import OFFSETS_TOPIC, GroupCoordinatorConfig
from kafkalite_server.group.coordinator import GroupCoordinator, JoinRequest
from kafkalite_server.group.log_store import LOAD_CHUNK_BYTES, OffsetsLogStore, read_log_chunks
from kafkalite_server.group.offsets_records import OffsetsReplay
from kafkalite_server.group.results import JoinResult, SyncResult
from kafkalite_server.group.timers import LoopScheduler
from kafkalite_server.group.txn_offsets import TransactionalOffsets

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

T = TypeVar("T")
OFFSETS_COMMIT_TIMEOUT_MS = 5000
"""Kafka's offsets.commit.timeout.ms: how long a commit waits for the ISR."""


class GroupCoordinatorService:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.config = GroupCoordinatorConfig.from_broker_config(broker.config)
        self.store = OffsetsLogStore(broker.replica_manager, broker.now_ms)
        self.coordinator = GroupCoordinator(
            self.config, LoopScheduler(broker.now_ms), self.store,
            pending_transactional_offsets=lambda: self.txn_offsets.pending_by_group())
        self.txn_offsets = TransactionalOffsets(self.coordinator, self.store, broker.now_ms)
        self._loads: dict[int, asyncio.Task[None]] = {}
        broker.replica_manager.add_leadership_listener(self)

    # -- ownership ----------------------------------------------------------------------------

    def on_become_leader(self, topic: str, partition: int, leader_epoch: int) -> None:
        """Load the offsets partition this broker now leads (replaying its log)."""
        if topic != OFFSETS_TOPIC or partition in self.coordinator.partitions():
            return
        if not self.coordinator.partitions():
            known = self._broker.metadata_cache.partitions_of(OFFSETS_TOPIC)
            self.coordinator.adopt_offsets_partition_count(
                len(known) if known else self.config.offsets_topic_num_partitions)
        self.coordinator.begin_loading(partition)
        if self.store.log_of(partition).size_in_bytes <= LOAD_CHUNK_BYTES:
            self._load_now(partition)  # small: no point answering LOAD_IN_PROGRESS
        else:
            self._loads[partition] = self._broker.tasks.spawn(
                self._load_in_steps(partition), f"load-offsets-{partition}"
            )

    def on_resign(self, topic: str, partition: int) -> None:
        """Stop serving the groups of an offsets partition led elsewhere now."""
        if topic != OFFSETS_TOPIC or partition not in self.coordinator.partitions():
            return
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        self.coordinator.unload_partition(partition)
        self.txn_offsets.unload(partition)

    def _load_now(self, partition: int) -> None:
        replay = OffsetsReplay()
        try:
            for records in read_log_chunks(self.store.log_of(partition)):
                replay.feed(records)
        except Exception:
            log.exception("loading %s-%d failed", OFFSETS_TOPIC, partition)
            self.coordinator.unload_partition(partition)
            return
        self.coordinator.complete_loading(partition, replay.loaded_groups())
        self.txn_offsets.loaded(partition, replay.transactional)

    async def _load_in_steps(self, partition: int) -> None:
        """Replay a large partition a chunk at a time, letting other requests run between."""
        replay = OffsetsReplay()
        try:
            for records in read_log_chunks(self.store.log_of(partition)):
                replay.feed(records)
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading %s-%d failed", OFFSETS_TOPIC, partition)
            self.coordinator.unload_partition(partition)
            return
        finally:
            self._loads.pop(partition, None)
        self.coordinator.complete_loading(partition, replay.loaded_groups())
        self.txn_offsets.loaded(partition, replay.transactional)

    # -- the offsets topic and coordinator lookup -----------------------------------------

    async def ensure_offsets_topic(self) -> None:
        """Asks the controller for ``__consumer_offsets`` (Kafka's internal-topic settings)
        unless this broker's metadata already has it; the topic shows up in the metadata
        cache once the controller has placed it."""
        if self._broker.metadata_cache.partitions_of(OFFSETS_TOPIC) is not None:
            return
        with contextlib.suppress(TopicAlreadyExistsError):
            await self._broker.controller.create_topic(
                OFFSETS_TOPIC,
                self.config.offsets_topic_num_partitions,
                self._offsets_replication_factor(),
                configs={
                    "cleanup.policy": "compact",
                    "segment.bytes": str(self.config.offsets_topic_segment_bytes),
                },
            )

    async def committed_in_isr(self, group_id: str) -> int:
        """Waits until the group's last write is committed in the ISR of its offsets
        partition (``offsets.commit.timeout.ms``, 5 s); 0, or the error to answer with,
        mapped as Kafka's coordinator maps it."""
        partition = self.coordinator.partition_for(group_id)
        offset = self.store.last_appended.get(partition)
        if offset is None:
            return 0
        key = (OFFSETS_TOPIC, partition)
        error = (await self._broker.replica_manager.await_replication(
            {key: offset}, OFFSETS_COMMIT_TIMEOUT_MS))[key]
        if error == NotLeaderOrFollowerError.errno:
            return NotCoordinatorError.errno
        return CoordinatorNotAvailableError.errno if error else 0

    def _offsets_replication_factor(self) -> int:
        """``offsets.topic.replication.factor`` in a cluster, capped at the live brokers;
        the standalone controller keeps one replica per partition."""
        if not isinstance(self._broker.membership, ClusterMembership):
            return 1
        return internal_replication_factor(
            OFFSETS_TOPIC, "offsets.topic.replication.factor",
            self._broker.config.offsets_topic_replication_factor,
            len(self._broker.metadata_cache.brokers))

    async def coordinator_for(self, group_id: str) -> BrokerEndpoint | None:
        """The broker leading the group's offsets partition, if it is up."""
        await self.ensure_offsets_topic()
        known = self._broker.metadata_cache.partitions_of(OFFSETS_TOPIC)
        if not known:
            return None
        if not self.coordinator.partitions():
            self.coordinator.adopt_offsets_partition_count(len(known))
        partition = self.coordinator.partition_for(group_id)
        if partition >= len(known):
            return None  # the topic shrank under a running coordinator: not servable
        return self._broker.metadata_cache.leader_endpoint(OFFSETS_TOPIC, partition)

    # -- parked requests as awaitables --------------------------------------------------------

    async def join(self, request: JoinRequest) -> JoinResult:
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self.coordinator.join_group(request, _resolver(future))
        return await future

    async def sync(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: dict[str, bytes],
        group_instance_id: str | None = None,
    ) -> SyncResult:
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self.coordinator.sync_group(
            group_id,
            generation_id,
            member_id,
            assignments,
            _resolver(future),
            group_instance_id=group_instance_id,
        )
        return await future

    def shutdown(self) -> None:
        for task in self._loads.values():
            task.cancel()
        self.coordinator.shutdown()


def _resolver(future: asyncio.Future[T]) -> Callable[[T], None]:
    """A callback that completes ``future`` unless its request was abandoned meanwhile."""

    def resolve(result: T) -> None:
        if not future.done():
            future.set_result(result)

    return resolve
