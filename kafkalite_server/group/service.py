"""The group coordinator inside a running broker.

It puts the sans-IO :class:`GroupCoordinator` (with the transactional offsets waiting for
their markers) on the coordinator runtime of ``__consumer_offsets``, which loads the
partitions this broker leads, appends and awaits the ISR; timers run on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from kafkalite_server.cluster.internal_topics import internal_replication_factor
from kafkalite_server.coordinator.runtime import CoordinatorRuntime, InternalTopic
from kafkalite_server.group.config import OFFSETS_TOPIC, GroupCoordinatorConfig
from kafkalite_server.group.consumer_service import ConsumerGroupService
from kafkalite_server.group.coordinator import GroupCoordinator, JoinRequest
from kafkalite_server.group.loading import OffsetsStateMachine
from kafkalite_server.group.log_store import OffsetsLogStore
from kafkalite_server.group.results import JoinResult, SyncResult
from kafkalite_server.group.timers import LoopScheduler
from kafkalite_server.group.txn_offsets import TransactionalOffsets

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

T = TypeVar("T")
OFFSETS_COMMIT_TIMEOUT_MS = 5000
"""Kafka's offsets.commit.timeout.ms: how long a commit waits for the ISR."""


class GroupCoordinatorService:
    def __init__(self, broker: Broker) -> None:
        self.config = config = GroupCoordinatorConfig.from_broker_config(broker.config)
        wanted = broker.config.offsets_topic_replication_factor
        self.runtime = CoordinatorRuntime(
            InternalTopic(
                OFFSETS_TOPIC, config.offsets_topic_num_partitions,
                replication_factor=lambda: internal_replication_factor(
                    OFFSETS_TOPIC, "offsets.topic.replication.factor", wanted,
                    len(broker.metadata_cache.brokers)),
                configs=lambda _replicas: {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(config.offsets_topic_segment_bytes)},
                commit_timeout_ms=OFFSETS_COMMIT_TIMEOUT_MS),
            replicas=broker.replica_manager, metadata=broker.metadata_cache,
            controller=broker.controller, spawn=broker.tasks.spawn)
        self.store = OffsetsLogStore(self.runtime, broker.now_ms)
        scheduler = LoopScheduler(broker.now_ms)
        self.coordinator = GroupCoordinator(
            config, scheduler, self.store,
            pending_transactional_offsets=lambda: self.txn_offsets.pending_by_group(),
            ownership=self.runtime.ownership,
            active_groups=lambda: frozenset(g.group_id for g in self.consumer.groups.groups()
                                            if g.members))
        self.txn_offsets = TransactionalOffsets(self.coordinator, self.store, broker.now_ms)
        self.runtime.serve(OffsetsStateMachine(self.coordinator, self.txn_offsets))
        self.consumer = ConsumerGroupService(broker, self.runtime, self.coordinator, scheduler)

    async def ensure_offsets_topic(self) -> None:
        """Asks the controller for ``__consumer_offsets`` unless the metadata has it."""
        await self.runtime.ensure_topic()

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
        self.runtime.shutdown()
        self.coordinator.shutdown()
        self.consumer.shutdown()


def _resolver(future: asyncio.Future[T]) -> Callable[[T], None]:
    """A callback that completes ``future`` unless its request was abandoned meanwhile."""

    def resolve(result: T) -> None:
        if not future.done():
            future.set_result(result)

    return resolve
