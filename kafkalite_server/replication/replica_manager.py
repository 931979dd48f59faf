"""The partitions this broker hosts, and the produce and fetch paths into their logs.

As in Kafka, the replica manager (not the request handlers) owns the request path's rules:
valid acks, the min.insync.replicas check, the produce and fetch purgatories, and capping
consumer reads at the high watermark. It changes only on the controller's word
(:meth:`become_leader_or_follower`, :meth:`stop_replicas`), fences controllers with an
older epoch, and tells leadership listeners (the group coordinator) what it gained or lost.
Whether a partition it does not lead is unknown or led elsewhere comes from the broker's
own metadata cache.

Replication: partitions it follows go to the replica fetchers (:mod:`fetcher`); a Fetch
from a follower (``replica_id`` >= 0) reads up to the log end and tells the partition the
follower's LEO, which may move the high watermark (waking acks=all produces) or let the
follower rejoin the ISR. :meth:`maybe_shrink_isr` runs periodically. ISR changes are
written to the partition state store by tasks of this manager (its :class:`IsrWriter`
side), never on the request path: the partition keeps the change pending until the store
answers. High watermarks are checkpointed in each log dir's
``replication-offset-checkpoint``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kafkalite.errors import CorruptRecordError, ProtocolDecodeError
from kafkalite.protocol.errors import (
    BrokerResponseError,
    CorruptMessageError,
    InconsistentTopicIdError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTopicError,
    KafkaStorageError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    StaleControllerEpochError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cancellation import cancel_and_wait
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.internal_topics import INTERNAL_TOPICS
from kafkalite_server.cluster.messages import NO_LEADER, LeaderAndIsr, PartitionState, StopReplica
from kafkalite_server.cluster.metadata_cache import MetadataCache
from kafkalite_server.log.checkpoint import CorruptCheckpointError, OffsetCheckpointFile
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.file_region import FileRegion
from kafkalite_server.log.log import AppendInfo, Log, LogOffsetMetadata, wall_clock_ms
from kafkalite_server.log.manager import LogManager
from kafkalite_server.log.transaction_index import AbortedTxn
from kafkalite_server.log.validator import RecordValidationError
from kafkalite_server.metrics.counters import ReplicaCounters
from kafkalite_server.quotas.replication import ReplicationQuotas
from kafkalite_server.replication.delayed import DelayedFetch, DelayedProduce, FetchPosition
from kafkalite_server.replication.fetcher import FetcherSettings, ReplicaFetcherManager
from kafkalite_server.replication.isr_store import IsrStore, StaleIsrVersionError
from kafkalite_server.replication.log_dir_failure import (
    LogDirFailureReporter,
)
from kafkalite_server.replication.partition import (
    IsrCommitted,
    IsrConflict,
    IsrFailed,
    IsrOutcome,
    Partition,
    PendingIsr,
)
from kafkalite_server.replication.purgatory import Purgatory
from kafkalite_server.topic_ids import ZERO
from kafkalite_server.topic_partition import TopicPartition

log = logging.getLogger(__name__)

VALID_ACKS = (-1, 0, 1)
CONSUMER_REPLICA_ID = -1
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"


class LeadershipListener(Protocol):
    """Kafka's onLeadershipChange callback: what the group coordinator follows."""

    def on_become_leader(self, topic: str, index: int, leader_epoch: int) -> None: ...

    def on_resign(self, topic: str, index: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ProduceResult:
    error_code: int = 0
    error_message: str | None = None
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    last_offset: int = -1
    record_errors: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class FetchRequest:
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    """The epoch of the fetcher's last record (Fetch v12+), -1 if it did not say."""


@dataclass(frozen=True, slots=True)
class FetchParams:
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int = 0
    """1 (read_committed): read up to the last stable offset, list aborted transactions."""
    follower_reads: bool = False
    """A consumer that sent its rack (Fetch v11+, KIP-392) may read from a follower,
    up to the follower's high watermark."""


READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class FetchResult:
    error_code: int
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes | FileRegion = b""
    """A region of the log's files (sent with sendfile), or no bytes."""
    last_stable_offset: int = -1
    aborted: list[AbortedTxn] | None = None
    diverging_epoch: tuple[int, int] | None = None
    """(epoch, end offset) where the fetcher's log diverged from this one: no records."""


@dataclass(frozen=True, slots=True)
class ReplicationSettings:
    lag_time_max_ms: int = 30_000
    fetcher: FetcherSettings = field(default_factory=FetcherSettings)


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, metadata: MetadataCache,
                 topic_config: Callable[[str], LogConfig],
                 state_store: IsrStore, settings: ReplicationSettings | None = None, *,
                 log_dir_failures: LogDirFailureReporter,
                 quotas: ReplicationQuotas | None = None,
                 now_ms: Callable[[], int] = wall_clock_ms) -> None:
        """Leaders write ISR changes to ``state_store``; a failed log dir is reported
        through ``log_dir_failures``; ``quotas`` are the replication throttles (KIP-73)."""
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata = metadata
        self.topic_config = topic_config
        self.state_store = state_store
        self.settings = settings or ReplicationSettings()
        self.quotas = quotas or ReplicationQuotas.unthrottled(broker_id)
        self.now_ms = now_ms
        self.partitions: dict[TopicPartition, Partition] = {}
        self.controller_epoch = -1
        self.fetch_purgatory = Purgatory("fetch")
        self.produce_purgatory = Purgatory("produce")
        self._listeners: list[LeadershipListener] = []
        self._fetchers: ReplicaFetcherManager | None = None
        self._store_tasks: set[asyncio.Task[None]] = set()
        self.log_dir_failures = log_dir_failures
        self._checkpointed = self._read_high_watermarks()
        self.counters = ReplicaCounters()

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        self._listeners.append(listener)

    # ------------------------------------------------------------------ controller requests

    def fence(self, controller_epoch: int) -> None:
        """STALE_CONTROLLER_EPOCH for a controller older than the newest one seen."""
        if controller_epoch < self.controller_epoch:
            raise StaleControllerEpochError(
                f"controller epoch {controller_epoch} < {self.controller_epoch} already seen")
        self.controller_epoch = controller_epoch

    def become_leader_or_follower(self, request: LeaderAndIsr) -> dict[TopicPartition, int]:
        """Applies each partition state naming this broker as a replica; older leader
        epochs are ignored (STALE_CONTROLLER_EPOCH for the partition, as Kafka answers).
        A leader stops fetching the partition; a follower starts (truncating first)."""
        self.fence(request.controller_epoch)
        leaders = {endpoint.node_id: endpoint for endpoint in request.live_leaders}
        errors: dict[TopicPartition, int] = {}
        for state in request.partitions:
            if self.broker_id not in state.replicas:
                errors[state.key] = UnknownTopicOrPartitionError.errno
                continue
            partition = self.partitions.get(state.key)
            if partition is not None and partition.log.offline:
                errors[state.key] = KafkaStorageError.errno  # its log dir failed
                continue
            if partition is not None and self._of_deleted_topic(state):
                self._drop(state.key)  # its directory is set aside below
                partition = None
            if partition is not None and state.leader_epoch < partition.leader_epoch:
                errors[state.key] = StaleControllerEpochError.errno
                continue
            was_leader = partition is not None and partition.is_leader
            new_epoch = partition is None or state.leader_epoch > partition.leader_epoch
            if partition is None:
                try:
                    partition = self._create_partition(state)
                except (KafkaStorageError, InconsistentTopicIdError) as exc:
                    # no descriptor, its log dir failed, or its log is another topic's
                    log.error("cannot create %s-%d: %s", state.topic, state.partition, exc)
                    errors[state.key] = exc.errno
                    continue
                self.partitions[state.key] = partition
            partition.apply(state, request.controller_epoch)
            errors[state.key] = 0
            if partition.is_leader:
                self._unfollow(state.key)
                for listener in self._listeners:
                    listener.on_become_leader(state.topic, state.partition,
                                              partition.leader_epoch)
            else:
                if was_leader:
                    self._resigned(state.topic, state.partition)
                if new_epoch or not self._following(state.key):
                    self._follow(partition, leaders.get(state.leader))
            self._wake(state.key)
        return errors

    def _of_deleted_topic(self, state: PartitionState) -> bool:
        """Whether the partition open here is of another topic than ``state``'s (by id):
        a deleted one of the same name whose StopReplica never reached this broker."""
        if state.topic_id == ZERO:
            return False
        held = self.log_manager.topic_id_of(state.topic, state.partition)
        return held is not None and held != state.topic_id

    def _create_partition(self, state: PartitionState) -> Partition:
        """Opens (or creates) the partition's log; a directory left by a deleted topic of
        the same name (another id in its ``partition.metadata``) is set aside first, and
        the high watermark checkpointed for it dropped: the replica starts empty."""
        topic_id = state.topic_id if state.topic_id != ZERO else None
        if topic_id is not None and self.log_manager.set_aside_stray(state.topic,
                                                                     state.partition, topic_id):
            self._checkpointed.pop(state.key, None)
        log_ = self.log_manager.create_log(state.topic, state.partition,
                                           self.topic_config(state.topic), topic_id=topic_id)
        return Partition(self.broker_id, state, log_, isr_writer=self,
                         lag_time_max_ms=self.settings.lag_time_max_ms, now_ms=self.now_ms,
                         broker_alive=self.metadata.broker_alive,
                         high_watermark=self._checkpointed.pop(state.key, 0))

    # ------------------------------------------------------------------ followers

    def _follow(self, partition: Partition, leader: BrokerEndpoint | None) -> None:
        """Fetch from the partition's leader (told in the LeaderAndIsr, else from the
        metadata cache); without a live leader, wait for the next LeaderAndIsr."""
        if leader is None and partition.leader_id != NO_LEADER:
            leader = self.metadata.brokers.get(partition.leader_id)
        if leader is None:
            self._unfollow(partition.key)
            return
        if self._fetchers is None:
            self._fetchers = ReplicaFetcherManager(self.broker_id, self.partitions.get,
                                                   self.settings.fetcher, self.quotas.follower)
        self._fetchers.follow(partition.key, leader, partition.leader_epoch)

    def _unfollow(self, key: TopicPartition) -> None:
        if self._fetchers is not None:
            self._fetchers.unfollow(key)

    def _following(self, key: TopicPartition) -> bool:
        return self._fetchers is not None and self._fetchers.is_following(key)

    def maybe_shrink_isr(self) -> None:
        """The periodic ISR check of every partition led here (a shrink is proposed here
        and written by :meth:`submit`)."""
        for partition in list(self.partitions.values()):
            if partition.is_leader and not partition.log.offline:
                partition.maybe_shrink_isr()

    # ------------------------------------------------------------------ ISR writes

    def submit(self, partition: Partition, pending: PendingIsr) -> None:
        """:class:`IsrWriter`: writes the proposal in a task of its own."""
        task = asyncio.get_running_loop().create_task(
            self._write_isr(partition, pending), name=f"isr-{partition.topic}-{partition.index}")
        self._store_tasks.add(task)
        task.add_done_callback(self._store_tasks.discard)

    async def _write_isr(self, partition: Partition, pending: PendingIsr) -> None:
        outcome: IsrOutcome
        try:
            outcome = IsrCommitted(await self.state_store.write(partition.key, pending.state,
                                                                pending.version))
        except StaleIsrVersionError:
            try:
                outcome = IsrConflict(*await self.state_store.read(partition.key))
            except Exception as exc:
                outcome = IsrFailed(f"cannot re-read the partition state: {exc}")
        except Exception as exc:
            outcome = IsrFailed(str(exc) or type(exc).__name__)
        before = len(partition.isr)
        if partition.complete_isr_change(pending, outcome):
            self._wake(partition.key)
        self.counters.isr_shrinks += len(partition.isr) < before
        self.counters.isr_expands += len(partition.isr) > before

    # ------------------------------------------------------------------ HW checkpoint

    def _read_high_watermarks(self) -> dict[TopicPartition, int]:
        found: dict[TopicPartition, int] = {}
        for log_dir in self.log_manager.log_dirs:
            try:
                found.update(OffsetCheckpointFile(log_dir / HIGH_WATERMARK_CHECKPOINT).read())
            except (OSError, CorruptCheckpointError) as exc:
                log.warning("%s: %s; high watermarks start at 0 and follow the leader",
                            log_dir / HIGH_WATERMARK_CHECKPOINT, exc)
        return found

    def checkpoint_high_watermarks(self) -> None:
        """Each log dir's ``replication-offset-checkpoint`` (offline dirs skipped)."""
        by_dir: dict[Path, dict[TopicPartition, int]] = {
            d: {} for d in self.log_manager.log_dirs if d not in self.log_manager.offline_dirs}
        for key, partition in self.partitions.items():
            owner = by_dir.get(partition.log.directory.parent)
            if owner is not None:
                owner[key] = partition.high_watermark
        for log_dir, offsets in by_dir.items():
            try:
                OffsetCheckpointFile(log_dir / HIGH_WATERMARK_CHECKPOINT).write(offsets)
            except OSError as exc:
                self.log_manager.mark_dir_offline(log_dir, exc)

    async def shutdown(self) -> None:
        """Stops the fetchers and ISR writes, and writes the last high watermarks."""
        if self._fetchers is not None:
            await self._fetchers.shutdown()
        await cancel_and_wait(list(self._store_tasks))
        self.checkpoint_high_watermarks()

    def stop_replicas(self, request: StopReplica) -> dict[TopicPartition, int]:
        """Drops the partitions (and their logs when ``delete``); parked requests re-check."""
        self.fence(request.controller_epoch)
        errors: dict[TopicPartition, int] = {}
        for topic, index in request.partitions:
            self._drop((topic, index))
            if request.delete:
                self.log_manager.delete_log(topic, index)
            errors[(topic, index)] = 0
        return errors

    def _drop(self, key: TopicPartition) -> None:
        """Stops serving and replicating the partition (its log stays open)."""
        partition = self.partitions.pop(key, None)
        self._unfollow(key)
        self._wake(key)
        if partition is not None and partition.is_leader:
            self._resigned(*key)

    def _resigned(self, topic: str, index: int) -> None:
        for listener in self._listeners:
            listener.on_resign(topic, index)

    def update_config(self, topic: str) -> None:
        """The topic's logs take its config as it is now (only if hosted here)."""
        hosted = [p for (name, _index), p in self.partitions.items() if name == topic]
        if hosted:
            config = self.topic_config(topic)
            for partition in hosted:
                partition.log.update_config(config)

    # ------------------------------------------------------------------ lookups

    def leader_partition(self, topic: str, index: int) -> Partition:
        partition = self.partitions.get((topic, index))
        if partition is not None and partition.is_leader:
            if partition.log.offline:
                raise KafkaStorageError(f"{topic}-{index}: log directory "
                                        f"{partition.log.directory.parent} is offline")
            return partition
        if partition is None and self.metadata.partition(topic, index) is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index}")
        raise NotLeaderOrFollowerError(f"{topic}-{index} is not led by broker {self.broker_id}")

    def is_offline(self, topic: str, index: int) -> bool:
        """Led here as the metadata says, but its log directory failed (Kafka's offline
        replica): until the controller moves the leadership away. A replica merely
        followed here says nothing about the partition's leader elsewhere."""
        partition = self.partitions.get((topic, index))
        state = self.metadata.partition(topic, index)
        return (partition is not None and partition.log.offline and state is not None
                and state.leader == self.broker_id)

    # ------------------------------------------------------------------ log dir failure

    def watch_log_dirs(self, loop: asyncio.AbstractEventLoop) -> None:
        """From now on a failed log dir (found on any thread) is handled on ``loop``."""
        self.log_manager.add_offline_listener(
            lambda log_dir: loop.call_soon_threadsafe(self._log_dir_failed, log_dir))

    def _log_dir_failed(self, log_dir: Path) -> None:
        """Kafka's handleLogDirFailure: the dir's replicas stop fetching and leading
        (requests waiting on them answer), and the controller hears of it, so that it
        moves their leadership away and takes them out of the ISRs. Other replicas on
        this broker carry on."""
        lost = [key for key, p in self.partitions.items() if p.log.directory.parent == log_dir]
        for key in lost:
            partition = self.partitions[key]
            self._unfollow(key)
            if partition.is_leader:
                self._resigned(*key)
            self._wake(key)
        log.warning("broker %d: %d replicas in %s are offline; telling the controller",
                    self.broker_id, len(lost), log_dir)
        task = asyncio.get_running_loop().create_task(self._report_log_dir_failure(),
                                                      name="log-dir-failure")
        self._store_tasks.add(task)
        task.add_done_callback(self._store_tasks.discard)

    async def _report_log_dir_failure(self) -> None:
        try:
            await self.log_dir_failures.log_dir_failed()
        except Exception as exc:
            log.error("broker %d: could not tell the controller about the failed log "
                      "dir: %s", self.broker_id, exc)

    def _leader_or_none(self, key: TopicPartition) -> Partition | None:
        partition = self.partitions.get(key)
        return partition if partition is not None and partition.is_leader else None

    def _readable_or_none(self, key: TopicPartition) -> Partition | None:
        """The local replica, leader or follower, if its log is online (KIP-392 reads)."""
        partition = self.partitions.get(key)
        return partition if partition is not None and not partition.log.offline else None

    def high_watermark_of(self, log_: Log) -> int:
        partition = self.partitions.get(log_.topic_partition)
        return partition.high_watermark if partition is not None else log_.log_start_offset

    # ------------------------------------------------------------------ produce

    async def append_records(self, entries: list[tuple[TopicPartition, memoryview | None]], *,
                             acks: int, timeout_ms: int, api_version: int,
                             on_appended: Callable[[], None] | None = None
                             ) -> dict[TopicPartition, ProduceResult]:
        """Appends each partition's records; with acks=-1 waits in the produce purgatory
        until the high watermark covers every append (REQUEST_TIMED_OUT otherwise, and
        NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas).
        ``on_appended`` is called once the records are in the log, before that wait."""
        results: dict[TopicPartition, ProduceResult] = {}
        for key, records in entries:
            if acks not in VALID_ACKS:
                results[key] = ProduceResult(InvalidRequiredAcksError.errno)
            else:
                results[key] = self._append_one(key, records, acks, api_version)
            self.counters.failed_produce[key[0]] += results[key].error_code != 0
        appended = {key: result.last_offset for key, result in results.items()
                    if result.error_code == 0}
        if acks != -1 or not appended:
            return results
        if on_appended is not None:
            on_appended()
        for key, error in (await self.await_replication(appended, timeout_ms)).items():
            if error:
                results[key] = ProduceResult(error)
        return results

    async def await_replication(self, required: dict[TopicPartition, int],
                                timeout_ms: int) -> dict[TopicPartition, int]:
        """Waits in the produce purgatory until each partition's high watermark passes
        its offset; an error code per partition (0: committed in the ISR)."""
        operation = DelayedProduce(timeout_ms, required, self._leader_or_none)
        await self.produce_purgatory.wait(operation, required)
        errors = {}
        for key in required:
            partition = self._leader_or_none(key)
            if partition is None:
                errors[key] = NotLeaderOrFollowerError.errno
            elif not operation.acknowledged(key):
                errors[key] = RequestTimedOutError.errno
            elif not partition.enough_replicas_after_append():
                errors[key] = NotEnoughReplicasAfterAppendError.errno
            else:
                errors[key] = 0
        return errors

    def _append_one(self, key: TopicPartition, records: memoryview | None, acks: int,
                    api_version: int) -> ProduceResult:
        try:
            partition = self.leader_partition(*key)
            if records is None or len(records) == 0:
                raise InvalidRecordError("produce request without records")
            info = self._append(partition, records, acks, api_version)
        except RecordValidationError as exc:
            return ProduceResult(exc.errno, exc.context, record_errors=exc.record_errors)
        except BrokerResponseError as exc:
            return ProduceResult(exc.errno, exc.context or None)
        except (CorruptRecordError, ProtocolDecodeError) as exc:
            return ProduceResult(CorruptMessageError.errno, str(exc))
        except Exception:
            log.exception("append to %s-%d failed", *key)
            return ProduceResult(UnknownServerError.errno)
        return ProduceResult(0, None, info.first_offset, info.log_append_time_ms,
                             info.log_start_offset, info.last_offset)

    def append_marker(self, topic: str, index: int, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int, commit: bool) -> AppendInfo:
        """WriteTxnMarkers for a partition led here: the marker ending a transaction."""
        partition = self.leader_partition(topic, index)
        info = partition.log.append_marker(producer_id, producer_epoch, coordinator_epoch,
                                           commit, leader_epoch=partition.leader_epoch)
        partition.advance_high_watermark()
        self._wake(partition.key)
        return info

    def append_local(self, topic: str, index: int, records: memoryview, *,
                     coordinator: bool = False) -> AppendInfo:
        """An internal append (the coordinators' records) to a partition led here;
        ``coordinator``: a transactional batch without sequence (TxnOffsetCommit)."""
        return self._append(self.leader_partition(topic, index), records, 1, api_version=8,
                            coordinator=coordinator)

    def _append(self, partition: Partition, records: memoryview, acks: int,
                api_version: int, coordinator: bool = False) -> AppendInfo:
        info = partition.append_records_to_leader(records, acks=acks, api_version=api_version,
                                                  coordinator=coordinator)
        if not info.duplicate:
            self._wake(partition.key)
            self.counters.messages_in[partition.topic] += info.record_count
            self.counters.bytes_in[partition.topic] += len(records)
        return info

    def _wake(self, key: TopicPartition) -> None:
        self.fetch_purgatory.check_and_complete(key)
        self.produce_purgatory.check_and_complete(key)

    # ------------------------------------------------------------------ fetch

    async def fetch_messages(self, params: FetchParams,
                             requests: list[FetchRequest]) -> list[FetchResult]:
        """One result per request, in order. Consumers read below the high watermark,
        followers (``replica_id`` >= 0) up to the log end; when fewer than ``min_bytes``
        are ready the fetch waits in the purgatory for an append, a high watermark move,
        a leadership change or ``max_wait_ms``, then reads again."""
        results, total, failed = self._read_all(params, requests)
        if failed or total >= params.min_bytes or params.max_wait_ms <= 0:
            return self._count_out(params, requests, results)
        positions = []
        for request in requests:
            key = (request.topic, request.partition)
            partition = (self._readable_or_none if params.follower_reads
                         else self._leader_or_none)(key)
            start = partition.log.offset_metadata(request.fetch_offset) if partition else None
            positions.append(FetchPosition(key, request.fetch_offset, start))
        lookup = self._readable_or_none if params.follower_reads else self._leader_or_none
        operation = DelayedFetch(params.max_wait_ms, params.min_bytes, positions, lookup,
                                 lambda partition: self._fetch_bound(
                                     partition, params.replica_id, params.isolation_level))
        await self.fetch_purgatory.wait(operation, {position.key for position in positions})
        return self._count_out(params, requests, self._read_all(params, requests)[0])

    def _count_out(self, params: FetchParams, requests: list[FetchRequest],
                   results: list[FetchResult]) -> list[FetchResult]:
        """Counts what a consumer fetch returns (Kafka's BytesOut); passes ``results`` on."""
        if params.replica_id < 0:
            bytes_out = self.counters.bytes_out
            for request, result in zip(requests, results, strict=True):
                bytes_out[request.topic] += len(result.records)
        return results

    def _read_all(self, params: FetchParams, requests: list[FetchRequest]
                  ) -> tuple[list[FetchResult], int, bool]:
        """(results, record bytes included, whether any partition has an error)."""
        remaining = params.max_bytes
        total = 0
        failed = False
        results = []
        for request in requests:
            result = self._read_one(params.replica_id, request,
                                    min(remaining, request.max_bytes), min_one_batch=total == 0,
                                    isolation_level=params.isolation_level,
                                    follower_reads=params.follower_reads)
            size = len(result.records)
            total += size
            remaining = max(remaining - size, 0)
            failed = failed or result.error_code != 0
            results.append(result)
        return results, total, failed

    def read_upper_bound(self, partition: Partition, isolation_level: int) -> int:
        """Where a consumer's reads stop: the high watermark, or for read_committed the
        last stable offset."""
        if isolation_level == READ_COMMITTED:
            return partition.log.last_stable_offset(partition.high_watermark)
        return partition.high_watermark

    def _fetch_bound(self, partition: Partition, replica_id: int,
                     isolation_level: int) -> LogOffsetMetadata:
        """A parked fetch's bound as offset metadata: the log end for a follower, the
        high watermark (kept as metadata) or the last stable offset for a consumer."""
        log_ = partition.log
        if replica_id >= 0:
            if self._leader_throttled(partition, replica_id) and self.quotas.leader.exceeded():
                return log_.offset_metadata(log_.log_start_offset)  # nothing to send yet
            return log_.offset_metadata(log_.log_end_offset)
        bound = self.read_upper_bound(partition, isolation_level)
        if bound == partition.high_watermark:
            return partition.high_watermark_metadata
        return log_.offset_metadata(bound)

    def _leader_throttled(self, partition: Partition, replica_id: int) -> bool:
        """A follower outside the ISR of a partition under the leader throttle."""
        return (replica_id not in partition.isr
                and self.quotas.leader.is_throttled(partition.topic, partition.index))

    def _read_one(self, replica_id: int, request: FetchRequest, max_bytes: int, *,
                  min_one_batch: bool, isolation_level: int = 0,
                  follower_reads: bool = False) -> FetchResult:
        partition = None
        try:
            key = (request.topic, request.partition)
            partition = (self._readable_or_none(key) if follower_reads and replica_id < 0
                         else None) or self.leader_partition(*key)
            partition.check_leader_epoch(request.current_leader_epoch)
            diverged = _diverging_epoch(partition, request)
            if diverged is not None:
                return FetchResult(0, partition.high_watermark, partition.log.log_start_offset,
                                   b"", partition.log.last_stable_offset(
                                       partition.high_watermark), diverging_epoch=diverged)
            if replica_id >= 0:  # a follower: up to the log end, and it tells its LEO
                throttled = self._leader_throttled(partition, replica_id)
                region = None
                if not (throttled and self.quotas.leader.exceeded()):
                    region = partition.log.read(request.fetch_offset, max_bytes,
                                                min_one_batch=min_one_batch)
                if throttled and region is not None:
                    self.quotas.leader.record(len(region))
                if partition.update_follower_fetch(replica_id, request.fetch_offset):
                    self._wake(partition.key)
                return FetchResult(0, partition.high_watermark, partition.log.log_start_offset,
                                   region if region is not None else b"")
            high_watermark = partition.high_watermark
            stable = partition.log.last_stable_offset(high_watermark)
            committed = isolation_level == READ_COMMITTED
            region = partition.log.read(request.fetch_offset, max_bytes,
                                        max_offset=stable if committed else high_watermark,
                                        min_one_batch=min_one_batch)
            aborted = None
            if committed:
                aborted = (partition.log.collect_aborted(request.fetch_offset, stable)
                           if region is not None else [])
            return FetchResult(0, high_watermark, partition.log.log_start_offset,
                               region if region is not None else b"", stable, aborted)
        except BrokerResponseError as exc:
            if partition is None:
                return FetchResult(exc.errno)
            return FetchResult(exc.errno, partition.high_watermark,
                               partition.log.log_start_offset)
        except Exception:
            log.exception("fetch from %s-%d failed", request.topic, request.partition)
            return FetchResult(UnknownServerError.errno)

    # ------------------------------------------------------------------ delete records

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        """DeleteRecords: raise the log start offset to ``offset`` (-1: the high
        watermark), never past the high watermark; returns the new low watermark.

        The log-start-offset checkpoint is written at once, so the deletion survives a
        crash; the segments below it go at the next retention pass.
        """
        if topic in INTERNAL_TOPICS:
            raise InvalidTopicError(f"cannot delete records of internal topic {topic!r}")
        partition = self.leader_partition(topic, index)
        target = partition.high_watermark if offset == -1 else offset
        if not 0 <= target <= partition.high_watermark:
            raise OffsetOutOfRangeError(f"{topic}-{index}: cannot move the log start offset "
                                        f"to {target}, the high watermark is "
                                        f"{partition.high_watermark}")
        partition.log.maybe_increment_log_start_offset(target)
        self.log_manager.checkpoint_log_start_offsets()
        self._wake(partition.key)
        return partition.log.log_start_offset


def _diverging_epoch(partition: Partition, request: FetchRequest) -> tuple[int, int] | None:
    """Kafka's check of a Fetch v12+ ``last_fetched_epoch``: this log's end of that epoch
    (or of the latest epoch before it); the fetcher's log diverged when that is an earlier
    epoch or ends before the fetch offset, and it must truncate there before fetching on."""
    if request.last_fetched_epoch < 0:
        return None
    epoch, end_offset = partition.log.end_offset_for_epoch(request.last_fetched_epoch)
    if epoch < request.last_fetched_epoch or end_offset < request.fetch_offset:
        return epoch, end_offset
    return None
