"""The share coordinator inside a running broker: the sans-IO :class:`ShareCoordinator` on
the coordinator runtime of ``__share_group_state`` (created on first use, compacted, with
Kafka's ``share.coordinator.state.topic.*`` settings; loaded on leadership). A change is
answered once its record is in the ISR of its partition, so a coordinator that fails right
after answering leaves its successor what it promised."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkalite.records import encode_batch
from kafkalite_server.cluster.internal_topics import internal_replication_factor
from kafkalite_server.coordinator.errors import write_error
from kafkalite_server.coordinator.runtime import CoordinatorRuntime, InternalTopic
from kafkalite_server.share.config import SHARE_STATE_TOPIC, ShareConfig
from kafkalite_server.share.coordinator import (
    KeyValue,
    ShareCoordinator,
    coordinator_key,
)
from kafkalite_server.share.records import StateKey
from kafkalite_server.share.state import PartitionState, StateBatch

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker


class ShareCoordinatorService:
    def __init__(self, broker: Broker, config: ShareConfig) -> None:
        self._now_ms = broker.now_ms
        metadata = broker.metadata_cache
        self.runtime = CoordinatorRuntime(
            InternalTopic(
                SHARE_STATE_TOPIC, config.state_topic_partitions,
                replication_factor=lambda: internal_replication_factor(
                    SHARE_STATE_TOPIC, "share.coordinator.state.topic.replication.factor",
                    config.state_topic_replication_factor, len(metadata.brokers)),
                configs=lambda replicas: {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(config.state_topic_segment_bytes),
                    "min.insync.replicas": str(min(config.state_topic_min_isr, replicas))},
                commit_timeout_ms=config.write_timeout_ms),
            replicas=broker.replica_manager, metadata=metadata,
            controller=broker.controller, spawn=broker.tasks.spawn)
        self.coordinator = ShareCoordinator(
            self.runtime.ownership, self._append, config.updates_per_snapshot,
            topic_exists=lambda id_: metadata.topic_name(id_) is not None)
        self.runtime.serve(self.coordinator)

    def _append(self, partition: int, records: list[KeyValue]) -> None:
        now = self._now_ms()
        self.runtime.append(partition, encode_batch([(k, v, now, ()) for k, v in records]))

    def partition_for(self, key: StateKey) -> int:
        """The state-topic partition (so the broker leading it) that keeps ``key``."""
        return self.runtime.placed(coordinator_key(key))

    async def _durable(self, key: StateKey, error: int) -> int:
        return error or await self.runtime.committed(coordinator_key(key))

    async def read(self, key: StateKey, leader_epoch: int) -> tuple[int, PartitionState]:
        self.partition_for(key)
        try:
            error, state = self.coordinator.read(key, leader_epoch)
        except Exception as exc:
            return write_error(exc), PartitionState()
        return await self._durable(key, error), state

    async def write(self, key: StateKey, state_epoch: int, leader_epoch: int,
                    start_offset: int, batches: Sequence[StateBatch]) -> int:
        self.partition_for(key)
        try:
            error = self.coordinator.write(key, state_epoch, leader_epoch, start_offset,
                                           batches)
        except Exception as exc:
            return write_error(exc)
        return await self._durable(key, error)

    async def initialize(self, key: StateKey, state_epoch: int, start_offset: int) -> int:
        self.partition_for(key)
        try:
            error = self.coordinator.initialize(key, state_epoch, start_offset)
        except Exception as exc:
            return write_error(exc)
        return await self._durable(key, error)

    async def delete(self, key: StateKey) -> int:
        self.partition_for(key)
        try:
            error = self.coordinator.delete(key)
        except Exception as exc:
            return write_error(exc)
        return await self._durable(key, error)

    def shutdown(self) -> None:
        self.runtime.shutdown()
