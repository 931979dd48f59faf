"""Consumer groups (KIP-848) inside a running broker: the sans-IO
:class:`~.consumer_groups.ConsumerGroups` on the group coordinator's runtime
(``__consumer_offsets``, beside the classic and share groups). A heartbeat is answered once
its records are in the ISR; members whose session or revocation time ran out are removed,
and the groups' regexes resolved, by a timer that runs every second while any consumer
group has members.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from kafkalite.records import encode_batch
from kafkalite_server.cluster.internal_topics import INTERNAL_TOPICS
from kafkalite_server.coordinator.errors import write_error
from kafkalite_server.coordinator.runtime import CoordinatorRuntime
from kafkalite_server.group.consumer_groups import (
    ConsumerGroupConfig,
    ConsumerGroups,
    Heartbeat,
    HeartbeatResult,
    Topics,
)
from kafkalite_server.group.consumer_migration import ClassicGroupsPort, MigrationPolicy
from kafkalite_server.group.coordinator import JoinRequest
from kafkalite_server.group.group_timeouts import CONSUMER_GROUP_TIMEOUTS, GroupTimeouts
from kafkalite_server.group.modern_records import KeyValue
from kafkalite_server.group.results import JoinResult, SyncResult
from kafkalite_server.group.timers import Scheduler, TimerHandle
from kafkalite_server.share.config import SHARE_STATE_TOPIC

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker
    from kafkalite_server.group.coordinator import GroupCoordinator

log = logging.getLogger(__name__)
R = TypeVar("R")

EXPIRY_CHECK_MS = 1000
CLASSIC_GROUP_TYPE = "classic"
"""ListGroups v5's group_type of a group run by JoinGroup/SyncGroup (KIP-848's "classic")."""


class ConsumerGroupService:
    def __init__(self, broker: Broker, runtime: CoordinatorRuntime, classic: GroupCoordinator,
                 scheduler: Scheduler) -> None:
        self._broker = broker
        self.runtime = runtime
        self._scheduler = scheduler
        self._timer: TimerHandle | None = None
        config = broker.config
        metadata = broker.metadata_cache

        def partition_count(topic: str) -> int | None:
            partitions = metadata.partitions_of(topic)
            return None if partitions is None else len(partitions)

        def partition_racks(topic: str) -> tuple[frozenset[str], ...]:
            brokers = metadata.brokers
            racks = tuple(frozenset(rack for r in state.replicas
                                    if r in brokers and (rack := brokers[r].rack) is not None)
                          for state in metadata.partitions_of(topic) or ())
            return racks if any(racks) else ()

        def other_group_type(group_id: str) -> str | None:
            group = classic.group(group_id)
            if group is not None and group.members:
                return CLASSIC_GROUP_TYPE
            share = getattr(broker, "share", None)  # installed after the group coordinator
            if share is not None and share.groups.coordinates(group_id):
                return "share"
            return None

        def group_configs(group_id: str) -> Mapping[str, str]:
            share = getattr(broker, "share", None)  # the GROUP configs are kept there
            return share.groups.groups.configs(group_id) if share is not None else {}

        self.groups = ConsumerGroups(
            runtime.ownership, self._append,
            Topics(partition_count, metadata.topic_id,
                   lambda: frozenset(metadata.topic_names()) - INTERNAL_TOPICS
                   - {SHARE_STATE_TOPIC}, partition_racks),
            scheduler.now_ms,
            ConsumerGroupConfig(GroupTimeouts.of(config, CONSUMER_GROUP_TIMEOUTS),
                                config.group_consumer_max_size,
                                config.group_consumer_assignors,
                                MigrationPolicy(config.group_consumer_migration_policy)),
            other_group_type=other_group_type,
            classic=ClassicGroupsPort(classic.migration_snapshot, classic.hand_over,
                                      classic.take_back),
            group_configs=group_configs)
        runtime.also_serve(self.groups)

    def _append(self, partition: int, records: list[KeyValue]) -> None:
        now = self._broker.now_ms()
        self.runtime.append(partition, encode_batch([(k, v, now, ()) for k, v in records]))

    async def heartbeat(self, heartbeat: Heartbeat) -> HeartbeatResult:
        await self.runtime.ensure_topic()
        self.runtime.placed(heartbeat.group_id)
        try:
            result = self.groups.heartbeat(heartbeat)
        except Exception as exc:  # the append failed
            return HeartbeatResult(write_error(exc))
        self._arm_expiry()
        error = await self.runtime.committed(heartbeat.group_id)
        return HeartbeatResult(error) if error else result

    # -- classic members of consumer groups (KIP-848's online migration); None: the group id
    # is not a consumer group here, the classic coordinator answers

    async def classic_join(self, request: JoinRequest) -> JoinResult | None:
        return await self._classic_call(request.group_id,
                                        lambda: self.groups.classic_join(request),
                                        lambda error: JoinResult(error,
                                                                 member_id=request.member_id))

    async def classic_sync(self, group_id: str, generation_id: int, member_id: str,
                           instance_id: str | None) -> SyncResult | None:
        return await self._classic_call(group_id, lambda: self.groups.classic_sync(
            group_id, generation_id, member_id, instance_id), SyncResult)

    def classic_heartbeat(self, group_id: str, generation_id: int, member_id: str,
                          instance_id: str | None) -> int | None:
        """A classic member's Heartbeat; the session timer runs for it as for any member
        (after a failover, this may be the first request of the group)."""
        error = self.groups.classic_heartbeat(group_id, generation_id, member_id, instance_id)
        if error is not None:
            self._arm_expiry()
        return error

    async def classic_leave(self, group_id: str, member_id: str,
                            instance_id: str | None) -> int | None:
        return await self._classic_call(group_id, lambda: self.groups.classic_leave(
            group_id, member_id, instance_id), int)

    async def _classic_call(self, group_id: str, call: Callable[[], R | None],
                            failed: Callable[[int], R]) -> R | None:
        """Runs a classic member's request on the consumer groups; answered once what it
        wrote is in the ISR."""
        if self.groups.group(group_id) is None:
            return None
        try:
            result = call()
        except Exception as exc:  # the append failed
            return failed(write_error(exc))
        if result is None:
            return None
        self._arm_expiry()
        error = await self.runtime.committed(group_id)
        return failed(error) if error else result

    async def delete(self, group_id: str) -> int:
        """DeleteGroups of a consumer group; its offsets go with the classic coordinator's
        deletion of the group id, done by the caller."""
        try:
            error = self.groups.delete(group_id)
        except Exception as exc:
            return write_error(exc)
        return error or await self.runtime.committed(group_id)

    def _arm_expiry(self) -> None:
        if self._timer is None:
            self._timer = self._scheduler.call_later(EXPIRY_CHECK_MS, self._expire)

    def _expire(self) -> None:
        self._timer = None
        try:
            self.groups.expire_members()
            self.groups.refresh_regexes()
        except Exception as exc:  # an append failed: the next check tries again
            log.warning("expiring consumer-group members, resolving regexes: %s", exc)
        if any(group.members for group in self.groups.groups()):
            self._arm_expiry()

    def shutdown(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
