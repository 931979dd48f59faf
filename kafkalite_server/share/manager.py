"""The share partitions this broker leads (Kafka's SharePartitionManager): the I/O around
the sans-IO :class:`~.partition.SharePartition`.

- **Loading.** A share partition is loaded on first use from its durable state (the share
  coordinator, through the :class:`~.persister.SharePersister`), at the leader epoch of
  the topic partition; it is dropped when leadership moves (the replica manager's
  leadership callbacks) and loaded again by the next leader.
- **Acquiring.** Records are read through the replica manager, as a consumer's Fetch reads
  them (up to the high watermark, or the last stable offset under read_committed, waiting
  up to ``max_wait_ms`` for ``min_bytes``), from the share partition's next fetch offset;
  the share partition decides which of them the member gets.
- **Acknowledging.** An acknowledgement is answered once the share state it leaves is
  written at the share coordinator: an acknowledged record is never redelivered, even by
  another leader. Writes of one share partition are serialized and coalesced (a write
  takes every change made before it starts). A write that fails drops the share
  partition: the next use reloads what is durable, and what was not written is
  redelivered.
- **Resets.** AlterShareGroupOffsets starts a partition's state over under a new state
  epoch; a leader holding the old state learns it when a member opens a share session
  (and a write of the old state is refused, FENCED_STATE_EPOCH, which drops it too).
- **Lock expiry.** A task looks every ``EXPIRY_INTERVAL_MS`` for locks that expired and
  writes the share partitions where records became available again.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafkalite.protocol.errors import (
    BrokerResponseError,
    FencedLeaderEpochError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
)
from kafkalite_server.replication.replica_manager import FetchParams, FetchRequest
from kafkalite_server.share.coordinator import NO_LEADER_EPOCH
from kafkalite_server.share.log_reading import read_batches, records_for
from kafkalite_server.share.partition import (
    Acknowledgement,
    AcquiredRange,
    ShareLimits,
    SharePartition,
)
from kafkalite_server.share.persister import SharePersister
from kafkalite_server.share.records import StateKey
from kafkalite_server.share.state import PartitionState

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

EXPIRY_INTERVAL_MS = 100
"""How often expired locks are looked for (a lock lasts at least a second)."""
IDLE_WAIT_S = 0.1
"""How long a ShareFetch that could acquire nothing more (every share partition at its
in-flight bound) waits before it answers empty, at most its ``max_wait_ms``."""

PartitionKey = tuple[str, str, int]
"""(group id, topic, partition)"""


@dataclass(frozen=True)
class GroupSettings:
    """A group's settings for its share partitions."""

    limits: ShareLimits
    isolation_level: int = 0
    """``share.isolation.level``: 0 read_uncommitted, 1 read_committed."""


@dataclass
class ManagedSharePartition:
    key: StateKey
    topic: str
    index: int
    share: SharePartition
    leader_epoch: int
    changes: int = 0
    """Changes made that need writing; ``written`` of them are written."""
    written: int = 0
    write_error: int = 0
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    dropped: bool = False
    """No longer served (leadership moved, a write failed): its changes are never written,
    so that they cannot be confirmed after a reload handed their records out again."""


@dataclass(frozen=True)
class FetchedPartition:
    error: int = 0
    records: bytes = b""
    acquired: list[AcquiredRange] = field(default_factory=list)


class SharePartitionManager:
    def __init__(self, broker: Broker, persister: SharePersister,
                 settings: Callable[[str], Awaitable[GroupSettings]]) -> None:
        self._broker = broker
        self._replicas = broker.replica_manager
        self._persister = persister
        self._settings = settings
        self._partitions: dict[PartitionKey, ManagedSharePartition] = {}
        self._loading: dict[PartitionKey, asyncio.Future[tuple[int, ManagedSharePartition | None]]] = {}
        self._replicas.add_leadership_listener(self)

    # ------------------------------------------------------------------ leadership

    def on_become_leader(self, topic: str, index: int, leader_epoch: int) -> None:
        """Still the leader (an ISR change raises the leader epoch too): the share
        partitions stay, and write with the new epoch. Dropping them here would reload
        a state that may miss the writes in flight, and hand their records out again."""
        for managed in self._of(topic, index):
            managed.leader_epoch = max(managed.leader_epoch, leader_epoch)

    def on_resign(self, topic: str, index: int) -> None:
        for managed in self._of(topic, index):
            self._forget(managed)

    def _of(self, topic: str, index: int) -> list[ManagedSharePartition]:
        return [m for (_g, t, i), m in self._partitions.items() if t == topic and i == index]

    def partitions_of(self, group_id: str) -> list[ManagedSharePartition]:
        return [p for (group, _t, _i), p in self._partitions.items() if group == group_id]

    # ------------------------------------------------------------------ loading

    async def get(self, group_id: str, topic: str,
                  index: int) -> tuple[int, ManagedSharePartition | None]:
        """The share partition, loaded if need be; or the error to answer (this broker
        does not lead the partition; the share coordinator cannot be reached)."""
        try:
            leader = self._replicas.leader_partition(topic, index)
        except BrokerResponseError as exc:
            return exc.errno, None
        key = (group_id, topic, index)
        found = self._partitions.get(key)
        if found is not None:
            return 0, found
        loading = self._loading.get(key)
        if loading is not None:
            return await asyncio.shield(loading)
        future = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        result: tuple[int, ManagedSharePartition | None] = (NotLeaderOrFollowerError.errno, None)
        try:
            result = await self._load(key, leader.leader_epoch)
        except Exception:
            log.exception("loading share partition %s failed", key)
        finally:
            del self._loading[key]
            future.set_result(result)  # also when cancelled: the others waiting answer
        return result

    async def _load(self, key: PartitionKey,
                    leader_epoch: int) -> tuple[int, ManagedSharePartition | None]:
        group_id, topic, index = key
        settings = await self._settings(group_id)
        state_key = StateKey(group_id, self._broker.metadata_cache.topic_id(topic), index)
        error, state = await self._persister.read(state_key, leader_epoch)
        if error:
            return error, None
        try:
            leader = self._replicas.leader_partition(topic, index)
        except BrokerResponseError as exc:
            return exc.errno, None  # leadership moved away while reading
        share = SharePartition(settings.limits, self._broker.now_ms)
        if not state.initialized:  # the group coordinator initializes before it assigns
            state = PartitionState(state.state_epoch, leader.high_watermark, leader_epoch)
        share.load(state)
        share.move_start(leader.log.log_start_offset)
        managed = ManagedSharePartition(state_key, topic, index, share,
                                        max(leader_epoch, leader.leader_epoch))
        self._partitions[key] = managed
        return 0, managed

    async def refresh(self, group_id: str, partitions: Sequence[tuple[str, int]]) -> None:
        """A member opened a share session: share partitions whose durable state has a
        newer state epoch (AlterShareGroupOffsets reset them) are loaded again."""
        for topic, index in partitions:
            managed = self._partitions.get((group_id, topic, index))
            if managed is None:
                continue
            error, state = await self._persister.read(managed.key, NO_LEADER_EPOCH)
            if not error and state.state_epoch > managed.share.state_epoch:
                self._forget(managed)

    # ------------------------------------------------------------------ fetching

    async def fetch(self, group_id: str, member_id: str, wanted: Sequence[tuple[str, int]], *,
                    max_wait_ms: int, min_bytes: int, max_bytes: int,
                    max_records: int) -> dict[tuple[str, int], FetchedPartition]:
        """Acquires records for ``member_id`` from the partitions in ``wanted``, read with
        the group's settings as they are now (a group config changed since a share
        partition was loaded applies from its next fetch, as in Kafka). A ``max_bytes`` of
        0 acquires nothing (Kafka answers such a ShareFetch without records)."""
        answers: dict[tuple[str, int], FetchedPartition] = {}
        ready: list[ManagedSharePartition] = []
        settings = await self._settings(group_id)
        for topic, index in wanted:
            error, managed = await self.get(group_id, topic, index)
            if managed is None:
                answers[(topic, index)] = FetchedPartition(error)
            elif managed.share.can_acquire() and max_bytes > 0:
                managed.share.limits = settings.limits
                ready.append(managed)
            else:
                answers[(topic, index)] = FetchedPartition()
        if not ready:
            if max_wait_ms > 0:
                await asyncio.sleep(min(max_wait_ms / 1000, IDLE_WAIT_S))
            return answers
        offsets = [managed.share.next_fetch_offset() for managed in ready]
        requests = [FetchRequest(m.topic, m.index, offset, max_bytes)
                    for m, offset in zip(ready, offsets, strict=True)]
        results = await self._replicas.fetch_messages(
            FetchParams(-1, max_wait_ms, min_bytes, max_bytes, settings.isolation_level),
            requests)
        budget = max(max_records, 1)
        for managed, offset, result in zip(ready, offsets, results, strict=True):
            where = (managed.topic, managed.index)
            if self._partitions.get((group_id, *where)) is not managed:
                answers[where] = FetchedPartition(NotLeaderOrFollowerError.errno)
                continue
            if result.error_code == OffsetOutOfRangeError.errno:
                managed.share.move_start(result.log_start_offset)
                answers[where] = FetchedPartition()
                continue
            if result.error_code:
                answers[where] = FetchedPartition(result.error_code)
                continue
            data = result.records if isinstance(result.records, bytes) \
                else result.records.read_bytes()
            read = read_batches(data, offset, result.aborted)
            acquired = managed.share.acquire(member_id, read.batches, budget)
            budget -= sum(r.last_offset - r.first_offset + 1 for r in acquired)
            answers[where] = FetchedPartition(0, records_for(data, read, acquired), acquired)
            if budget <= 0:
                break
        for managed in ready:
            answers.setdefault((managed.topic, managed.index), FetchedPartition())
        return answers

    # ------------------------------------------------------------------ acknowledging

    async def acknowledge(self, group_id: str, member_id: str, topic: str, index: int,
                          acknowledgements: Sequence[Acknowledgement]) -> int:
        """Applies and writes a member's acknowledgements of one partition; 0 once durable."""
        error, managed = await self.get(group_id, topic, index)
        if managed is None:
            return error
        error = managed.share.acknowledge(member_id, acknowledgements)
        return error or await self._persist(managed)

    async def release(self, group_id: str, member_id: str,
                      partitions: Sequence[tuple[str, int]] | None = None) -> None:
        """The member's records in ``partitions`` (all it holds here when None) become
        available again: its share session closed, or it forgot the partitions."""
        for managed in self.partitions_of(group_id):
            if partitions is not None and (managed.topic, managed.index) not in partitions:
                continue
            if managed.share.release_member(member_id):
                await self._persist(managed)

    async def expire_locks(self) -> None:
        """Writes the share partitions in which locks expired (records available again)."""
        now = self._broker.now_ms()
        expired = []
        for managed in list(self._partitions.values()):
            deadline = managed.share.next_lock_deadline()
            if deadline is not None and deadline <= now and managed.share.expire_locks():
                expired.append(managed)
        if expired:
            await asyncio.gather(*(self._persist(m) for m in expired))

    async def _persist(self, managed: ManagedSharePartition) -> int:
        managed.changes += 1
        wanted = managed.changes
        async with managed.write_lock:
            if managed.written >= wanted:
                return managed.write_error
            if managed.dropped:
                return NotLeaderOrFollowerError.errno
            target = managed.changes
            error = await self._persister.write(managed.key,
                                                managed.share.snapshot(managed.leader_epoch))
            managed.written, managed.write_error = target, error
        if error:
            log.info("share state of %s not written (error %d): reloading it", managed.key,
                     error)
            self._forget(managed)
            if error == FencedLeaderEpochError.errno:
                return NotLeaderOrFollowerError.errno
        return error

    def _forget(self, managed: ManagedSharePartition) -> None:
        managed.dropped = True
        key = (managed.key.group_id, managed.topic, managed.index)
        if self._partitions.get(key) is managed:
            del self._partitions[key]

    def forget_group(self, group_id: str, topic_ids: set[uuid.UUID] | None = None) -> None:
        """Drops the group's share partitions (of ``topic_ids`` only, when given)."""
        for managed in self.partitions_of(group_id):
            if topic_ids is None or managed.key.topic_id in topic_ids:
                self._forget(managed)
