"""How a broker reaches the share coordinator of a share partition (Kafka's Persister):
in process when this broker leads the key's ``__share_group_state`` partition, else with
Read/Write/Initialize/DeleteShareGroupState to the broker that does.

The coordinator may move (a failover) or still be loading: NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and a lost connection are retried,
each time with a fresh look at who leads the partition, until ``timeout_ms``; what is
answered then is the last error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    RequestTimedOutError,
)
from kafkalite_server.cluster.peer_requests import PeerRequests
from kafkalite_server.share.config import SHARE_STATE_TOPIC
from kafkalite_server.share.coordinator_service import ShareCoordinatorService
from kafkalite_server.share.records import StateKey
from kafkalite_server.share.state import PartitionState, StateBatch

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

RETRIABLE = frozenset((NotCoordinatorError.errno, CoordinatorNotAvailableError.errno,
                       CoordinatorLoadInProgressError.errno))
RETRY_BACKOFF_S = 0.1


class SharePersister:
    def __init__(self, broker: Broker, coordinator: ShareCoordinatorService,
                 peers: PeerRequests, timeout_ms: int) -> None:
        self._broker = broker
        self._coordinator = coordinator
        self._peers = peers
        self._timeout_s = timeout_ms / 1000

    async def read(self, key: StateKey, leader_epoch: int) -> tuple[int, PartitionState]:
        answer: tuple[int, PartitionState] = (RequestTimedOutError.errno, PartitionState())

        async def local() -> int:
            nonlocal answer
            answer = await self._coordinator.read(key, leader_epoch)
            return answer[0]

        async def remote(body: dict[str, Any]) -> int:
            nonlocal answer
            result = body["results"][0]["partitions"][0]
            answer = (result["error_code"], PartitionState(
                result["state_epoch"], result["start_offset"], leader_epoch,
                tuple(StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"],
                                 b["delivery_count"]) for b in result["state_batches"])))
            return answer[0]

        error = await self._call(key, local, ApiKey.READ_SHARE_GROUP_STATE,
                                 {"leader_epoch": leader_epoch}, remote)
        return error, answer[1]

    async def write(self, key: StateKey, state: PartitionState) -> int:
        async def local() -> int:
            return await self._coordinator.write(key, state.state_epoch, state.leader_epoch,
                                                 state.start_offset, state.batches)

        return await self._call(key, local, ApiKey.WRITE_SHARE_GROUP_STATE, {
            "state_epoch": state.state_epoch, "leader_epoch": state.leader_epoch,
            "start_offset": state.start_offset, "state_batches": _wire(state.batches)})

    async def initialize(self, key: StateKey, state_epoch: int, start_offset: int) -> int:
        async def local() -> int:
            return await self._coordinator.initialize(key, state_epoch, start_offset)

        return await self._call(key, local, ApiKey.INITIALIZE_SHARE_GROUP_STATE,
                                {"state_epoch": state_epoch, "start_offset": start_offset})

    async def delete(self, key: StateKey) -> int:
        async def local() -> int:
            return await self._coordinator.delete(key)

        return await self._call(key, local, ApiKey.DELETE_SHARE_GROUP_STATE, {})

    async def _call(self, key: StateKey, local: Callable[[], Awaitable[int]], api_key: ApiKey,
                    fields: dict[str, Any],
                    remote: Callable[[dict[str, Any]], Awaitable[int]] | None = None) -> int:
        deadline = time.monotonic() + self._timeout_s
        error = RequestTimedOutError.errno
        while True:
            error = await self._attempt(key, local, api_key, fields, remote)
            if error not in RETRIABLE or time.monotonic() + RETRY_BACKOFF_S > deadline:
                return error
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def _attempt(self, key: StateKey, local: Callable[[], Awaitable[int]],
                       api_key: ApiKey, fields: dict[str, Any],
                       remote: Callable[[dict[str, Any]], Awaitable[int]] | None) -> int:
        try:
            await self._coordinator.runtime.ensure_topic()
        except KafkaError as exc:
            log.info("share state topic not available: %s", exc)
            return CoordinatorNotAvailableError.errno
        partition = self._coordinator.partition_for(key)
        leader = self._broker.metadata_cache.leader_endpoint(SHARE_STATE_TOPIC, partition)
        if leader is None:
            return CoordinatorNotAvailableError.errno
        if leader.node_id == self._broker.node_id:
            return await local()
        body = {"group_id": key.group_id, "topics": [{"topic_id": key.topic_id, "partitions": [
            {"partition": key.partition, **fields}]}]}
        try:
            answer = await self._peers.call(leader, api_key, 0, body)
        except (OSError, TimeoutError, KafkaError) as exc:
            log.info("%s to broker %d: %s", api_key.name, leader.node_id, exc)
            return NotCoordinatorError.errno
        if remote is not None:
            return await remote(answer)
        return int(answer["results"][0]["partitions"][0]["error_code"])


def _wire(batches: Sequence[StateBatch]) -> list[dict[str, int]]:
    return [{"first_offset": b.first_offset, "last_offset": b.last_offset,
             "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
            for b in batches]
