"""One coordinator's plumbing on its internal topic (Kafka's CoordinatorRuntime).

The runtime owns everything between a sans-IO coordinator (see
:mod:`.state_machine`) and the broker:

- **The topic.** Created through the controller on the first lookup, with the
  replication factor the broker's rule gives (a function: the broker knows its cluster)
  and the coordinator's topic configs.
- **The lookup.** FindCoordinator's answer for a key: the live leader of its partition.
- **Ownership.** The replica manager reports leadership (Kafka's onLeadershipChange); the
  runtime loads a partition it now leads and unloads one it lost, in
  :class:`~.ownership.Ownership`. A newer leader epoch of a leadership it holds only
  raises the coordinator epoch.
- **Loading.** The leader's log is read a chunk (``LOAD_CHUNK_BYTES``) at a time into the
  state machine's loader; the first chunk at once, so a small partition is served without
  a LOAD_IN_PROGRESS answer, the rest in a task that yields to the event loop between
  chunks, so other connections are served while a large partition loads.
- **Writes.** :meth:`append` puts records in the leader's log at once;
  :meth:`committed` waits until the ISR has everything appended to a key's partition, and
  says, in the coordinator errors clients know (:mod:`.errors`), if it did not.
- **Deleted topics.** The metadata cache says which topics an UpdateMetadata deletes; a
  partition just loaded is also checked, once the broker's first metadata (which lists
  every topic) is in, for what was deleted while no coordinator held it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafkalite.errors import KafkaError
from kafkalite.protocol.errors import TopicAlreadyExistsError
from kafkalite.records import Record, iter_batches
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.metadata_cache import MetadataCache
from kafkalite_server.coordinator.errors import coordinator_error
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.coordinator.state_machine import (
    CoordinatorStateMachine,
    PartitionLoader,
    StateMachines,
)
from kafkalite_server.log.log import Log
from kafkalite_server.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

LOAD_CHUNK_BYTES = 1024 * 1024
"""How much of the log one loading step reads before other requests get a turn."""
FIRST_METADATA_WAIT_S = 300
"""How long a loaded partition waits for the broker's first metadata before it is checked
for deleted topics (the controller sends it right after the partition)."""


@dataclass(frozen=True)
class InternalTopic:
    """The coordinator's topic, as the runtime creates it."""

    name: str
    partitions: int
    replication_factor: Callable[[], int]
    """The broker's rule (e.g. the setting, capped at the live brokers)."""
    configs: Callable[[int], Mapping[str, str]]
    """Topic configs for a replication factor."""
    commit_timeout_ms: int
    """How long :meth:`CoordinatorRuntime.committed` waits for the ISR."""


class TopicCreator(Protocol):
    async def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     configs: Mapping[str, str | None] | None = None) -> Any: ...


Spawn = Callable[[Any, str], "asyncio.Task[None]"]


class CoordinatorRuntime:
    def __init__(self, topic: InternalTopic, *, replicas: ReplicaManager,
                 metadata: MetadataCache, controller: TopicCreator, spawn: Spawn) -> None:
        """Nothing is loaded until :meth:`serve` gives the runtime its state machine (which
        is built on this runtime's :attr:`ownership` and :meth:`append`)."""
        self.topic = topic
        self.ownership = Ownership(topic.partitions)
        self._machine: CoordinatorStateMachine | None = None
        self._replicas = replicas
        self._metadata = metadata
        self._controller = controller
        self._spawn = spawn
        self._last_appended: dict[int, int] = {}
        """Partition -> offset of the last record appended to it (or loaded from it)."""
        self._loads: dict[int, asyncio.Task[None]] = {}
        self._waiting: dict[int, int] = {}
        """Partitions led before the first UpdateMetadata -> their leader epochs."""

    def serve(self, state_machine: CoordinatorStateMachine) -> None:
        """Start following leadership of the topic's partitions, and topic deletions."""
        self._machine = state_machine
        self._replicas.add_leadership_listener(self)
        self._metadata.on_topics_deleted(
            lambda topics: self.machine.topics_deleted(topics.__contains__, None))

    def also_serve(self, state_machine: CoordinatorStateMachine) -> None:
        """Another coordinator on the same topic (share groups beside the groups on
        ``__consumer_offsets``): it gets the records of partitions loaded from now on.
        Called at start-up, before this broker leads any of the topic's partitions."""
        if self.ownership.partitions:
            raise RuntimeError(f"{self.topic.name}: a coordinator joins before any load")
        self._machine = StateMachines(self.machine, state_machine)

    @property
    def machine(self) -> CoordinatorStateMachine:
        if self._machine is None:
            raise RuntimeError(f"the {self.topic.name} runtime has no state machine yet")
        return self._machine

    # ------------------------------------------------------------------ the topic and lookup

    async def ensure_topic(self) -> None:
        """Asks the controller for the topic unless this broker's metadata has it; it shows
        up in the metadata cache once the controller has placed it. The controller's store
        is written off the event loop, so this is awaited."""
        if self._metadata.partitions_of(self.topic.name) is not None:
            return
        replication_factor = self.topic.replication_factor()
        with contextlib.suppress(TopicAlreadyExistsError):
            await self._controller.create_topic(self.topic.name, self.topic.partitions,
                                          replication_factor,
                                          configs=dict(self.topic.configs(replication_factor)))

    async def coordinator_for(self, key: str) -> BrokerEndpoint | None:
        """The broker leading ``key``'s partition, if it is up (FindCoordinator)."""
        await self.ensure_topic()
        known = self._metadata.partitions_of(self.topic.name)
        if not known:
            return None
        partition = self.placed(key)
        if partition >= len(known):
            return None  # the topic shrank under a running coordinator: not servable
        return self._metadata.leader_endpoint(self.topic.name, partition)

    def placed(self, key: str) -> int:
        """``key``'s partition, counting the topic's partitions as the metadata has them
        (Kafka's rule when the topic exists with another count than configured)."""
        known = self._metadata.partitions_of(self.topic.name)
        if known:
            self._adopt_partition_count(len(known))
        return self.ownership.partition_for(key)

    def _adopt_partition_count(self, count: int) -> None:
        if not self.ownership.partitions:
            self.ownership.adopt_partition_count(count)

    # ------------------------------------------------------------------ writes

    def append(self, partition: int, records: bytes, *, transactional: bool = False) -> int:
        """Appends a batch to the partition's leader log; returns its last offset. Raises
        the append's error (see :func:`~.errors.write_error`). ``transactional``: a batch
        the coordinator writes for a producer's transaction (TxnOffsetCommit)."""
        info = self._replicas.append_local(self.topic.name, partition,
                                           memoryview(bytearray(records)),
                                           coordinator=transactional)
        self._last_appended[partition] = info.last_offset
        return info.last_offset

    async def committed(self, key: str) -> int:
        """Waits until the ISR has every record appended to ``key``'s partition; 0, or the
        coordinator error to answer with."""
        return await self.partition_committed(self.ownership.partition_for(key))

    async def partition_committed(self, partition: int) -> int:
        offset = self._last_appended.get(partition)
        if offset is None:
            return 0
        where = (self.topic.name, partition)
        errors = await self._replicas.await_replication({where: offset},
                                                        self.topic.commit_timeout_ms)
        return coordinator_error(errors[where])

    def committed_now(self, partition: int) -> bool:
        """Whether the ISR has every record appended to ``partition`` already."""
        offset = self._last_appended.get(partition)
        if offset is None:
            return True
        try:
            leader = self._replicas.leader_partition(self.topic.name, partition)
        except KafkaError:
            return False
        return leader.high_watermark > offset

    # ------------------------------------------------------------------ leadership

    def on_become_leader(self, topic: str, partition: int, leader_epoch: int) -> None:
        if topic != self.topic.name:
            return
        if partition in self.ownership.partitions:
            self.ownership.raise_epoch(partition, leader_epoch)
            return
        if not self._metadata.has_first_update:
            # A starting broker hears LeaderAndIsr before its first UpdateMetadata: until
            # then it does not know how many partitions the topic really has, and keys
            # placed by the configured count would land in the wrong partition (a group's
            # offsets found "elsewhere" and ignored). Load once the view is in.
            first = not self._waiting
            self._waiting[partition] = leader_epoch
            if first:
                self._spawn(self._load_after_first_update(), f"load-{topic}-after-metadata")
            return
        self._load(partition, leader_epoch)

    async def _load_after_first_update(self) -> None:
        await self._metadata.wait_first_update(FIRST_METADATA_WAIT_S)
        waiting, self._waiting = self._waiting, {}
        for partition, leader_epoch in sorted(waiting.items()):
            self._load(partition, leader_epoch)

    def _load(self, partition: int, leader_epoch: int) -> None:
        topic = self.topic.name
        known = self._metadata.partitions_of(topic)
        self._adopt_partition_count(len(known) if known else self.topic.partitions)
        self.ownership.begin_loading(partition, leader_epoch)
        try:
            log_ = self._replicas.leader_partition(topic, partition).log
            loader = self.machine.loader(partition)
        except Exception:
            log.exception("loading %s-%d failed", topic, partition)
            self._unload(partition)
            return
        if log_.log_end_offset > 0:  # loaded records count as written now: see committed()
            self._last_appended[partition] = log_.log_end_offset - 1
        chunks = read_log_chunks(log_)
        if not self._load_step(partition, loader, chunks):
            self._loads[partition] = self._spawn(self._load_rest(partition, loader, chunks),
                                                 f"load-{topic}-{partition}")

    def on_resign(self, topic: str, partition: int) -> None:
        if topic != self.topic.name:
            return
        self._waiting.pop(partition, None)
        if partition in self.ownership.partitions:
            self._unload(partition)

    def _unload(self, partition: int) -> None:
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        self.ownership.unload(partition)
        self._last_appended.pop(partition, None)
        self.machine.unload(partition)

    def _load_step(self, partition: int, loader: PartitionLoader,
                   chunks: Iterator[list[Record]]) -> bool:
        """Feeds the next chunk; True once the load is over (completed or failed)."""
        try:
            records = next(chunks, None)
            if records is not None:
                loader.load(records)
                return False
            if not self.ownership.complete_loading(partition):
                return True  # leadership moved away meanwhile
            loader.complete()
        except Exception:
            log.exception("loading %s-%d failed", self.topic.name, partition)
            self._unload(partition)
            return True
        self._spawn(self._check_deleted_topics(partition),
                    f"deleted-topics-{self.topic.name}-{partition}")
        return True

    async def _load_rest(self, partition: int, loader: PartitionLoader,
                         chunks: Iterator[list[Record]]) -> None:
        try:
            while not self._load_step(partition, loader, chunks):
                await asyncio.sleep(0)
        finally:
            if self._loads.get(partition) is asyncio.current_task():
                del self._loads[partition]

    async def _check_deleted_topics(self, partition: int) -> None:
        if await self._metadata.wait_first_update(FIRST_METADATA_WAIT_S) \
                and self.ownership.is_owned(partition):
            self.machine.topics_deleted(
                lambda topic: self._metadata.partitions_of(topic) is None, partition)

    def shutdown(self) -> None:
        for partition in sorted(self.ownership.partitions):
            self._unload(partition)


def read_log_chunks(log_: Log, chunk_bytes: int = LOAD_CHUNK_BYTES) -> Iterator[list[Record]]:
    """The log's records from its start, in chunks of whole batches, for replay."""
    offset = log_.log_start_offset
    while offset < log_.log_end_offset:
        region = log_.read(offset, chunk_bytes)
        if region is None:
            return
        records: list[Record] = []
        next_offset = offset
        for batch in iter_batches(region.read_bytes()):
            batch.ensure_valid()
            records.extend(batch.records())
            next_offset = batch.next_offset
        if next_offset <= offset:
            return  # no complete batch: nothing more can be read
        offset = next_offset
        yield records
