"""Share groups inside a running broker: the sans-IO :class:`~.group.ShareGroups` on the
group coordinator's runtime (``__consumer_offsets``, beside the classic groups), and what
needs I/O around it:

- a heartbeat that subscribes the group to partitions without share state first creates
  that state at the share coordinator (InitializeShareGroupState) at the start offset
  ``share.auto.offset.reset`` gives (``latest``: the partition's high watermark now;
  ``earliest``: its log start), asking the partition's leader (ListOffsets) when it is
  another broker; the member is assigned the partitions whose state exists. As from
  Kafka, that heartbeat is answered with the assignment from before the new partitions:
  the members learn of them at their next heartbeat, when consumers started together are
  all in the group, so the first one is not handed every partition (and every record)
  for a heartbeat interval before the others join;
- a heartbeat is answered once its records are in the ISR;
- members whose session expired are removed every ``EXPIRY_INTERVAL_MS``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    BrokerResponseError,
    GroupIdNotFoundError,
    InvalidRequestError,
    NonEmptyGroupError,
    UnknownTopicOrPartitionError,
)
from kafkalite.records import encode_batch
from kafkalite_server.cluster.peer_requests import PeerRequests
from kafkalite_server.coordinator.errors import write_error
from kafkalite_server.group.consumer_groups import CONSUMER_GROUP_TYPE
from kafkalite_server.group.consumer_service import CLASSIC_GROUP_TYPE
from kafkalite_server.share.config import SHARE_GROUP_TYPE, ShareConfig
from kafkalite_server.share.coordinator import NO_LEADER_EPOCH
from kafkalite_server.share.group import HeartbeatResult, KeyValue, ShareGroups, Topics
from kafkalite_server.share.group_configs import AUTO_OFFSET_RESET, GroupConfigs
from kafkalite_server.share.persister import SharePersister
from kafkalite_server.share.records import StateKey

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

EXPIRY_INTERVAL_MS = 1000
LATEST, EARLIEST = -1, -2
"""ListOffsets' timestamps for the high watermark and the log start."""
LIST_OFFSETS_VERSION = 2
INITIAL_STATE_EPOCH = 0


class ShareGroupService:
    def __init__(self, broker: Broker, config: ShareConfig, persister: SharePersister,
                 peers: PeerRequests, configs: GroupConfigs) -> None:
        self._broker = broker
        self._persister = persister
        self._peers = peers
        self._configs = configs
        metadata = broker.metadata_cache
        classic = broker.group_coordinator
        self.runtime = classic.runtime

        def partition_count(topic: str) -> int | None:
            partitions = metadata.partitions_of(topic)
            return None if partitions is None else len(partitions)

        self.groups = ShareGroups(
            self.runtime.ownership, self._append,
            Topics(partition_count, metadata.topic_id),
            broker.now_ms, timeouts=config.timeouts,
            max_size=config.max_group_size,
            other_group_type=lambda group_id: (
                CLASSIC_GROUP_TYPE if classic.coordinator.group(group_id) is not None
                else CONSUMER_GROUP_TYPE if classic.consumer.groups.group(group_id) is not None
                else None))
        self.runtime.also_serve(self.groups)

    def _append(self, partition: int, records: list[KeyValue]) -> None:
        now = self._broker.now_ms()
        self.runtime.append(partition, encode_batch([(k, v, now, ()) for k, v in records]))

    def start(self) -> None:
        self._broker.tasks.every(EXPIRY_INTERVAL_MS, "share-group-sessions",
                                 self._expire_members)

    async def alter_offsets(self, group_id: str, wanted: Sequence[tuple[str, int, int]]
                            ) -> dict[tuple[str, int], int]:
        """AlterShareGroupOffsets for an empty group: each partition's share state starts
        over at the offset given, under a state epoch above the one it had."""
        error = self.groups.ownership.error_for(group_id)
        group = self.groups.group(group_id) if not error else None
        if not error and group is not None and group.members:
            error = NonEmptyGroupError.errno
        if error:
            return {(topic, index): error for topic, index, _offset in wanted}
        metadata = self._broker.metadata_cache
        errors: dict[tuple[str, int], int] = {}
        done = []
        for topic, index, offset in wanted:
            if metadata.partition(topic, index) is None or offset < 0:
                errors[(topic, index)] = UnknownTopicOrPartitionError.errno if offset >= 0 \
                    else InvalidRequestError.errno
                continue
            key = StateKey(group_id, metadata.topic_id(topic), index)
            code, state = await self._persister.read(key, NO_LEADER_EPOCH)
            if not code:
                code = await self._persister.initialize(key, state.state_epoch + 1, offset)
            errors[(topic, index)] = code
            if not code:
                done.append((topic, index))
        if done:
            self.groups.initialized(group_id, done)
            errors.update(dict.fromkeys(done, await self.runtime.committed(group_id)))
        return errors

    def coordinates(self, group_id: str) -> bool:
        """Is ``group_id`` a share group this broker coordinates?"""
        return self.groups.group(group_id) is not None

    async def delete(self, group_id: str) -> int:
        """DeleteGroups of a share group: an empty one loses its share state
        (DeleteShareGroupState), then its records on ``__consumer_offsets``."""
        group = self.groups.group(group_id)
        if group is None:
            return GroupIdNotFoundError.errno
        if group.members:
            return NonEmptyGroupError.errno
        keys = [StateKey(group_id, topic_id_, index)
                for topic_id_, (_name, partitions) in group.initialized.items()
                for index in sorted(partitions)]
        errors = await asyncio.gather(*(self._persister.delete(key) for key in keys))
        failed = next((error for error in errors if error), 0)
        if failed:
            return failed
        try:
            self.groups.delete(group_id)
        except Exception as exc:
            return write_error(exc)
        return await self.runtime.committed(group_id)

    def listings(self) -> list[tuple[str, str, str, str]]:
        """ListGroups' (group id, protocol type, state, group type) of the share groups
        coordinated here."""
        return [(g.group_id, SHARE_GROUP_TYPE, g.state, SHARE_GROUP_TYPE)
                for g in self.groups.groups()]

    async def _expire_members(self) -> None:
        self.groups.expire_members()

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                        rack_id: str | None, subscribed: Sequence[str] | None, *,
                        client_id: str, client_host: str) -> HeartbeatResult:
        await self.runtime.ensure_topic()
        self.runtime.placed(group_id)
        try:
            result = self.groups.heartbeat(group_id, member_id, member_epoch, rack_id,
                                           subscribed, client_id=client_id,
                                           client_host=client_host)
        except Exception as exc:  # the append failed
            return HeartbeatResult(write_error(exc))
        if result.error or result.member_epoch < 0:
            return await self._durable(group_id, result)
        pending = self.groups.uninitialized(group_id)
        if pending:
            done = await self._initialize(group_id, pending)
            try:
                self.groups.initialized(group_id, done)
            except Exception as exc:
                return HeartbeatResult(write_error(exc))
        return await self._durable(group_id, result)

    async def _durable(self, group_id: str, result: HeartbeatResult) -> HeartbeatResult:
        error = await self.runtime.committed(group_id)
        return HeartbeatResult(error) if error else result

    async def _initialize(self, group_id: str,
                          pending: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """Creates the share state of ``pending`` partitions; those it could create."""
        reset = self._configs.effective(self.groups.configs(group_id))[AUTO_OFFSET_RESET]
        earliest = reset == "earliest"
        offsets = await self._start_offsets(pending, EARLIEST if earliest else LATEST)
        async def initialize(topic: str, index: int, offset: int) -> tuple[str, int] | None:
            key = StateKey(group_id, self._broker.metadata_cache.topic_id(topic), index)
            error = await self._persister.initialize(key, INITIAL_STATE_EPOCH, offset)
            if error:
                log.info("share state of %s not initialized (error %d)", key, error)
                return None
            return topic, index

        done = await asyncio.gather(*(initialize(t, i, o) for (t, i), o in offsets.items()))
        return [where for where in done if where is not None]

    async def _start_offsets(self, partitions: Sequence[tuple[str, int]],
                             timestamp: int) -> dict[tuple[str, int], int]:
        """Each partition's start offset, from its leader; those whose leader answered."""
        found: dict[tuple[str, int], int] = {}
        remote: dict[int, list[tuple[str, int]]] = {}
        metadata = self._broker.metadata_cache
        for topic, index in partitions:
            state = metadata.partition(topic, index)
            if state is None or state.leader < 0:
                continue
            if state.leader != self._broker.node_id:
                remote.setdefault(state.leader, []).append((topic, index))
                continue
            try:
                leader = self._broker.replica_manager.leader_partition(topic, index)
            except BrokerResponseError:
                continue
            found[(topic, index)] = leader.log.log_start_offset if timestamp == EARLIEST \
                else leader.high_watermark
        for node, asked in remote.items():
            found.update(await self._list_offsets(node, asked, timestamp))
        return found

    async def _list_offsets(self, node: int, partitions: list[tuple[str, int]],
                            timestamp: int) -> dict[tuple[str, int], int]:
        peer = self._broker.metadata_cache.brokers.get(node)
        if peer is None:
            return {}
        topics: dict[str, list[int]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(index)
        body = {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": i, "timestamp": timestamp}
                                           for i in indexes]}
            for topic, indexes in topics.items()]}
        try:
            answer = await self._peers.call(peer, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION,
                                            body)
        except (OSError, TimeoutError, KafkaError) as exc:
            log.info("ListOffsets to broker %d: %s", node, exc)
            return {}
        return {(t["name"], p["partition_index"]): p["offset"]
                for t in answer["topics"] for p in t["partitions"] if not p["error_code"]}


