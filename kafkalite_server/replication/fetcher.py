"""Replica fetchers: how a follower copies its leaders' logs.

One :class:`ReplicaFetcher` per source broker, an asyncio task on the broker's loop, that
multiplexes every partition this broker follows from that leader into one Fetch request
(``replica_id`` = this broker, ``current_leader_epoch`` per partition, the local LEO as
fetch offset). A partition added to a fetcher first *truncates* (KIP-101/KIP-279): it asks
the leader, with OffsetForLeaderEpoch, where its own latest epoch ends, cuts its log
there, and only then fetches. Fetched batches go through :meth:`Partition.append_as_follower`
unchanged; the follower's high watermark follows the leader's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    BrokerResponseError,
    OffsetOutOfRangeError,
    error_for_code,
)
from kafkalite_server.cancellation import cancel_and_wait
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kafkalite_server.quotas.replication import ReplicationQuota
from kafkalite_server.replication.partition import Partition
from kafkalite_server.replication.peer_connection import PeerConnection
from kafkalite_server.security.inter_broker import PeerSecurity
from kafkalite_server.topic_partition import TopicPartition

log = logging.getLogger(__name__)

FETCH_VERSION = 11
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
THROTTLED_RETRY_S = 0.1
"""How soon a partition held back by the follower throttle is looked at again."""


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    """Kafka's replica.* settings."""

    wait_max_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1024 * 1024
    response_max_bytes: int = 10 * 1024 * 1024
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30_000
    security: PeerSecurity = field(default_factory=PeerSecurity)
    """How to connect to the leader (the inter-broker listener's protocol)."""


@dataclass(slots=True)
class FetchState:
    leader_epoch: int
    truncating: bool = True
    retry_at: float = 0.0


class ReplicaFetcher:
    def __init__(self, local_id: int, source: BrokerEndpoint,
                 partition_of: Callable[[TopicPartition], Partition | None],
                 settings: FetcherSettings, quota: ReplicationQuota) -> None:
        """``quota`` is the follower throttle (KIP-73)."""
        self.local_id = local_id
        self.source = source
        self._partition_of = partition_of
        self.settings = settings
        self.quota = quota
        self.states: dict[TopicPartition, FetchState] = {}
        self._changed = asyncio.Event()
        self._stopped = False
        self._connection = PeerConnection(
            source, f"replica-fetcher-{local_id}", timeout_s=settings.socket_timeout_ms / 1000,
            max_response_bytes=settings.response_max_bytes + 1024 * 1024,
            security=settings.security)
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"replica-fetcher-{local_id}-from-{source.node_id}")

    def add(self, key: TopicPartition, leader_epoch: int) -> None:
        """Follow ``key`` in ``leader_epoch``: truncate first, then fetch."""
        self.states[key] = FetchState(leader_epoch)
        self._changed.set()

    def remove(self, key: TopicPartition) -> None:
        self.states.pop(key, None)

    async def stop(self) -> None:
        self._stopped = True
        await cancel_and_wait([self._task])
        self._connection.close()

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopped:
            now = loop.time()
            ready = {k: s for k, s in self.states.items() if s.retry_at <= now}
            if not ready:
                self._changed.clear()
                wake = min((s.retry_at for s in self.states.values()), default=None)
                timeout = None if wake is None else max(wake - now, 0.0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), timeout)
                continue
            try:
                truncating = {k: s for k, s in ready.items() if s.truncating}
                if truncating:
                    await self._truncate(truncating)
                else:
                    await self._fetch(ready)
            except asyncio.CancelledError:
                raise
            except (OSError, TimeoutError, KafkaError) as exc:
                log.info("broker %d: fetch from broker %d failed: %s", self.local_id,
                         self.source.node_id, exc or type(exc).__name__)
                self._back_off(ready)
            except Exception:
                log.exception("broker %d: replica fetcher from broker %d failed",
                              self.local_id, self.source.node_id)
                self._back_off(ready)

    def _back_off(self, keys: dict[TopicPartition, FetchState],
                  delay_s: float | None = None) -> None:
        """Retries ``keys`` after ``delay_s`` (default: ``replica.fetch.backoff.ms``)."""
        delay = self.settings.backoff_ms / 1000 if delay_s is None else delay_s
        retry_at = asyncio.get_running_loop().time() + delay
        for key, state in keys.items():
            if self.states.get(key) is state:
                state.retry_at = retry_at

    # ------------------------------------------------------------------ truncation

    async def _truncate(self, states: dict[TopicPartition, FetchState]) -> None:
        """OffsetForLeaderEpoch for each partition's latest local epoch, then cut the log
        at the divergence point; without a local epoch, cut at the high watermark."""
        asked: dict[TopicPartition, int] = {}
        for key, state in states.items():
            partition = self._partition_of(key)
            if partition is None:
                continue
            latest = partition.log.leader_epoch_cache.latest_epoch
            if latest == UNDEFINED_EPOCH:
                self._truncated(key, state, partition, partition.high_watermark)
            else:
                asked[key] = latest
        if not asked:
            return
        topics: dict[str, list[dict[str, int]]] = {}
        for (topic, index), epoch in asked.items():
            topics.setdefault(topic, []).append({
                "partition": index, "current_leader_epoch": states[(topic, index)].leader_epoch,
                "leader_epoch": epoch})
        response = await self._connection.send(
            ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION,
            {"replica_id": self.local_id,
             "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]})
        failed = {}
        for topic in response["topics"]:
            for answer in topic["partitions"]:
                key = (topic["topic"], answer["partition"])
                asked_state = states.get(key)
                partition = self._partition_of(key)
                if (asked_state is None or partition is None
                        or self.states.get(key) is not asked_state):
                    continue
                if answer["error_code"]:
                    failed[key] = asked_state
                    continue
                target = self._divergence_point(partition, asked[key], answer["leader_epoch"],
                                                answer["end_offset"])
                self._truncated(key, asked_state, partition, target)
        self._back_off(failed)

    @staticmethod
    def _divergence_point(partition: Partition, asked_epoch: int, leader_epoch: int,
                          leader_end_offset: int) -> int:
        """Where the local log stops matching the leader's (KIP-101, KIP-279): the end of
        the largest epoch both know, as the leader and this log each see it."""
        log_ = partition.log
        if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
            return partition.high_watermark
        if leader_epoch == asked_epoch:
            return min(leader_end_offset, log_.log_end_offset)
        _epoch, local_end = log_.end_offset_for_epoch(leader_epoch)
        if local_end == UNDEFINED_EPOCH_OFFSET:
            return min(leader_end_offset, log_.log_end_offset)
        return min(leader_end_offset, local_end, log_.log_end_offset)

    def _truncated(self, key: TopicPartition, state: FetchState, partition: Partition,
                   target: int) -> None:
        if target < partition.log.log_end_offset:
            log.info("broker %d: truncating %s-%d from %d to %d", self.local_id, *key,
                     partition.log.log_end_offset, target)
            partition.truncate_to(target)
        state.truncating = False

    # ------------------------------------------------------------------ fetching

    async def _fetch(self, states: dict[TopicPartition, FetchState]) -> None:
        requested: dict[TopicPartition, int] = {}
        topics: dict[str, list[dict[str, Any]]] = {}
        throttled: set[TopicPartition] = set()
        held: dict[TopicPartition, FetchState] = {}
        exceeded = self.quota.exceeded()
        for key, state in states.items():
            partition = self._partition_of(key)
            if partition is None:
                continue
            if self.local_id not in partition.isr and self.quota.is_throttled(*key):
                if exceeded:  # over the follower throttle: not fetched for now
                    held[key] = state
                    continue
                throttled.add(key)
            offset = partition.log.log_end_offset
            requested[key] = offset
            topics.setdefault(key[0], []).append({
                "partition": key[1], "current_leader_epoch": state.leader_epoch,
                "fetch_offset": offset, "log_start_offset": partition.log.log_start_offset,
                "partition_max_bytes": self.settings.max_bytes})
        self._back_off(held, THROTTLED_RETRY_S)
        if not requested:
            return
        settings = self.settings
        response = await self._connection.send(ApiKey.FETCH, FETCH_VERSION, {
            "replica_id": self.local_id, "max_wait_ms": settings.wait_max_ms,
            "min_bytes": settings.min_bytes, "max_bytes": settings.response_max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            "forgotten_topics_data": [], "rack_id": ""})
        if response["error_code"]:
            raise error_for_code(response["error_code"])(
                f"fetch from broker {self.source.node_id} failed")
        failed = {}
        for topic in response["responses"]:
            for answer in topic["partitions"]:
                key = (topic["topic"], answer["partition_index"])
                asked_state = states.get(key)
                partition = self._partition_of(key)
                if (asked_state is None or partition is None
                        or self.states.get(key) is not asked_state
                        or partition.log.log_end_offset != requested.get(key)):
                    continue
                if key in throttled:
                    self.quota.record(len(answer["records"] or b""))
                if not self._process(key, asked_state, partition, answer):
                    failed[key] = asked_state
        self._back_off(failed)

    def _process(self, key: TopicPartition, state: FetchState, partition: Partition,
                 answer: dict[str, Any]) -> bool:
        """Applies one partition's answer; False to retry it after the backoff."""
        error = answer["error_code"]
        if error == OffsetOutOfRangeError.errno:
            return self._out_of_range(key, state, partition, answer)
        if error:
            log.debug("broker %d: fetch of %s-%d from broker %d: error %d", self.local_id,
                      *key, self.source.node_id, error)
            return False
        records = answer["records"]
        try:
            partition.append_as_follower(memoryview(records or b""), answer["high_watermark"],
                                         answer["log_start_offset"])
        except (BrokerResponseError, KafkaError) as exc:
            log.error("broker %d: cannot append the batches of %s-%d fetched from broker "
                      "%d: %s", self.local_id, *key, self.source.node_id, exc)
            return False
        return True

    def _out_of_range(self, key: TopicPartition, state: FetchState, partition: Partition,
                      answer: dict[str, Any]) -> bool:
        """Below the leader's log start: start over there. Otherwise the leader's log is
        shorter (an unclean election): find the divergence point again."""
        leader_start = answer["log_start_offset"]
        if leader_start >= 0 and partition.log.log_end_offset < leader_start:
            log.warning("broker %d: %s-%d is below the leader's log start %d; starting "
                        "over there", self.local_id, *key, leader_start)
            partition.truncate_fully_and_start_at(leader_start)
            return True
        state.truncating = True
        return True


class ReplicaFetcherManager:
    """The fetchers of one broker, one per source broker; partitions move between them
    as leadership moves."""

    def __init__(self, local_id: int,
                 partition_of: Callable[[TopicPartition], Partition | None],
                 settings: FetcherSettings, quota: ReplicationQuota) -> None:
        self.local_id = local_id
        self._partition_of = partition_of
        self.settings = settings
        self.quota = quota
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._source_of: dict[TopicPartition, int] = {}

    def follow(self, key: TopicPartition, leader: BrokerEndpoint, leader_epoch: int) -> None:
        self.unfollow(key)
        fetcher = self.fetchers.get(leader.node_id)
        if fetcher is None or fetcher.source != leader:
            old = fetcher
            fetcher = self.fetchers[leader.node_id] = ReplicaFetcher(
                self.local_id, leader, self._partition_of, self.settings, self.quota)
            if old is not None:  # the broker came back at a new address
                asyncio.get_running_loop().create_task(old.stop())
                for moved, state in old.states.items():
                    fetcher.add(moved, state.leader_epoch)
        fetcher.add(key, leader_epoch)
        self._source_of[key] = leader.node_id

    def unfollow(self, key: TopicPartition) -> None:
        source = self._source_of.pop(key, None)
        if source is not None and source in self.fetchers:
            self.fetchers[source].remove(key)

    def is_following(self, key: TopicPartition) -> bool:
        return key in self._source_of

    async def shutdown(self) -> None:
        fetchers = list(self.fetchers.values())
        self.fetchers.clear()
        self._source_of.clear()
        for fetcher in fetchers:
            await fetcher.stop()
