"""EmbeddedCluster: N brokers inside the current process, on free loopback ports.

The brokers form a real cluster over the in-memory coordination backend
(:mod:`kafkalite_server.cluster.memory_store`): they register, elect a controller and
follow its LeaderAndIsr / UpdateMetadata / StopReplica messages, replicate, and elect new
leaders when one goes, with the same controller and broker code as brokers in separate
processes over ZooKeeper. All brokers run on one asyncio loop in one background thread.

Layout of ``data_dir``: ``broker-<id>/`` is each broker's log dir (with its
``meta.properties``); ``coordination.json`` holds the coordination store's persistent nodes
(topics, partition states, configs, the cluster id, the producer id block), written when the
cluster stops, so a cluster started again on the same ``data_dir`` finds its topics.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidReplicaAssignmentError,
    NotControllerError,
    UnknownTopicOrPartitionError,
)
from kafkalite.protocol.schemas.elections import ElectionType
from kafkalite_server.broker import Broker
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.active_controller import Controller
from kafkalite_server.cluster.atomic_file import write_atomically
from kafkalite_server.cluster.coordination import SetData
from kafkalite_server.cluster.memory_store import MemoryEnsemble
from kafkalite_server.cluster.messages import PartitionState
from kafkalite_server.config import BrokerConfig
from kafkalite_server.launch import launch_cluster_broker

T = TypeVar("T")
_START_TIMEOUT_S = 60
_TICK_S = 0.1
_UNWIND_S = 5.0
log = logging.getLogger(__name__)
SNAPSHOT_FILE = "coordination.json"


class EmbeddedCluster:
    """A context manager; ``bootstrap_servers`` is ready once ``start()`` returns, with
    every broker registered and leading what the controller gave it."""

    def __init__(self, num_brokers: int = 1, data_dir: str | Path | None = None,
                 config: Mapping[str, str] | None = None) -> None:
        """``config`` holds broker settings by Kafka's names, the same for every broker
        (``broker.id``, ``log.dirs`` and the port are the cluster's to choose)."""
        if num_brokers < 1:
            raise ValueError("an EmbeddedCluster needs at least one broker")
        self.num_brokers = num_brokers
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self._settings = {key: str(value) for key, value in (config or {}).items()}
        self.data_dir: Path | None = None
        self.ensemble: MemoryEnsemble | None = None
        self.brokers: list[Broker] = []
        self._ticker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> EmbeddedCluster:
        if self._loop is not None:
            return self
        self.data_dir = self._given_dir or Path(tempfile.mkdtemp(prefix="kafkalite-"))
        snapshot = self.data_dir / SNAPSHOT_FILE
        self.ensemble = (MemoryEnsemble.restored(snapshot.read_bytes()) if snapshot.exists()
                         else MemoryEnsemble())
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="kafkalite-embedded",
                                        daemon=True)
        self._thread.start()
        try:
            self._run(self._launch())
        except BaseException:
            self._shutdown_loop()
            self.brokers = []
            raise
        return self

    async def _launch(self) -> None:
        ensemble = self.ensemble
        assert ensemble is not None
        self._ticker = asyncio.get_running_loop().create_task(self._tick(ensemble))
        try:
            for broker_id in range(self.num_brokers):
                self.brokers.append(await self._launch_broker(broker_id))
            await _until(self._settled)
        except BaseException:
            await self._stop_all()
            raise

    def _broker_config(self, broker_id: int) -> BrokerConfig:
        assert self.data_dir is not None
        settings = {"host.name": "127.0.0.1", "port": "0", **self._settings,
                    "broker.id": str(broker_id),
                    "log.dirs": str(self.data_dir / f"broker-{broker_id}")}
        return BrokerConfig.from_properties(settings)

    async def _launch_broker(self, broker_id: int) -> Broker:
        assert self.ensemble is not None
        ensemble = self.ensemble
        config = self._broker_config(broker_id)
        return await launch_cluster_broker(
            config, lambda: ensemble.connect(config.zookeeper_session_timeout_ms))

    @staticmethod
    async def _tick(ensemble: MemoryEnsemble) -> None:
        """Expires the sessions of paused brokers as time passes (ZooKeeper's timer)."""
        while True:
            await asyncio.sleep(_TICK_S)
            ensemble.tick()

    def _settled(self) -> bool:
        """Every broker knows every running broker, and every partition the controller has
        given a running leader is led there with that epoch."""
        ids = {broker.node_id for broker in self.brokers}
        if any(set(broker.metadata_cache.brokers) != ids for broker in self.brokers):
            return False
        controller = self._active_controller()
        if controller is None:
            return False
        return all(self._leads(controller.partition_state(key))
                   for key in controller.assignments_keys())

    def _leads(self, state: PartitionState) -> bool:
        """The state's leader (if running) leads with its epoch, and all brokers know it."""
        broker = next((b for b in self.brokers if b.node_id == state.leader), None)
        if broker is None:
            return True
        partition = broker.replica_manager.partitions.get((state.topic, state.partition))
        if partition is None or not partition.is_leader or (
                partition.leader_epoch != state.leader_epoch):
            return False
        return all((seen := b.metadata_cache.partition(state.topic, state.partition))
                   is not None and seen.leader_epoch >= state.leader_epoch
                   for b in self.brokers)

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            self._run(self._stop_all())
        finally:
            self._shutdown_loop()
            self.brokers = []
            if self._given_dir is None and self.data_dir is not None:
                shutil.rmtree(self.data_dir, ignore_errors=True)

    async def _stop_all(self) -> None:
        """The whole cluster stops: no broker hands leadership to another that is about
        to stop too (each still closes its logs cleanly); then the coordination store's
        persistent nodes are saved for the next start on this data dir."""
        if self._ticker is not None:
            self._ticker.cancel()
        for broker in self.brokers:
            broker.membership.abandon()
        for broker in self.brokers:
            await broker.stop()
        await _cancel_remaining_tasks()
        if self._given_dir is not None and self.ensemble is not None:
            write_atomically(self._given_dir / SNAPSHOT_FILE, self.ensemble.snapshot())

    def _shutdown_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ access

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.endpoint.host}:{b.endpoint.port}" for b in self.brokers)

    @property
    def cluster_id(self) -> str:
        return self.brokers[0].metadata_cache.cluster_id

    def broker(self, broker_id: int) -> Broker:
        for broker in self.brokers:
            if broker.node_id == broker_id:
                return broker
        raise KeyError(f"no running broker {broker_id}")

    @property
    def controller_id(self) -> int:
        """The broker that is the active controller now (-1 if none)."""
        controller = self._active_controller()
        return -1 if controller is None else controller.broker_id

    def _active_controller(self) -> Controller | None:
        for broker in self.brokers:
            controller = broker.membership.active_controller
            if controller is not None:
                return controller
        return None

    # ------------------------------------------------------------------ topics and leadership

    def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     configs: Mapping[str, str] | None = None) -> None:
        """Creates a topic as CreateTopics does (-1: the broker defaults) and returns once
        every partition's leader leads it and every broker knows it."""
        async def create() -> None:
            await self.brokers[0].controller.create_topic(name, num_partitions,
                                                          replication_factor, configs)
            await _until(lambda: (controller := self._active_controller()) is not None
                         and name in controller.assignments and self._settled())
        self._run(create())

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        """The partition's leader, leader epoch, ISR and replicas as the controller has
        them now."""
        async def read() -> PartitionState:
            controller = self._require_controller()
            if (topic, partition) not in controller.states:
                raise UnknownTopicOrPartitionError(f"{topic}-{partition}")
            return controller.partition_state((topic, partition))
        return self._run(read())

    def elect_leader(self, topic: str, partition: int, broker_id: int) -> PartitionState:
        """Makes ``broker_id`` (a replica in the ISR) the partition's leader the way an
        operator does in Kafka: a reassignment to the same replicas with ``broker_id``
        first, then a preferred leader election (ElectLeaders). Returns the new state once
        the new leader leads and every broker knows it; the old leader answers
        NOT_LEADER_OR_FOLLOWER from then on. Raises the election's error (a replica not
        in the ISR: PREFERRED_LEADER_NOT_AVAILABLE)."""
        key = (topic, partition)

        async def elect() -> PartitionState:
            controller = self._require_controller()
            replicas = controller.assignments.get(topic, {}).get(partition)
            if replicas is None:
                raise UnknownTopicOrPartitionError(f"{topic}-{partition}")
            if broker_id not in replicas:
                raise InvalidReplicaAssignmentError(
                    f"broker {broker_id} is not a replica of {topic}-{partition} {replicas}")
            if replicas[0] != broker_id:
                await self._reorder(controller, topic, partition, broker_id)
            outcome = controller.elect_on_request(ElectionType.PREFERRED, [key])[key]
            if isinstance(outcome, BrokerResponseError) and controller.states[key][0].leader \
                    != broker_id:
                raise outcome
            state = controller.partition_state(key)
            await _until(lambda: self._leads(state))
            return state
        return self._run(elect())

    @staticmethod
    async def _reorder(controller: Controller, topic: str, partition: int,
                       first: int) -> None:
        """Writes the topic's assignment with ``first`` leading the partition's replicas
        (a version-checked write of ``/brokers/topics/<topic>``) and waits until the
        controller has read it through its watch."""
        path = layout.topic_path(topic)
        data, stat = controller.store.get(path)
        assignment = layout.decode_assignment(topic, data)
        replicas = assignment[partition]
        assignment[partition] = [first, *(b for b in replicas if b != first)]
        document = layout.encode_assignment(assignment,
                                            topic_id=layout.decode_topic_id(topic, data))
        controller.store.commit([SetData(path, document, stat.version)])
        await _until(lambda: controller.assignments[topic][partition][0] == first)

    def _require_controller(self) -> Controller:
        controller = self._active_controller()
        if controller is None:
            raise NotControllerError("the cluster has no active controller")
        return controller

    # ------------------------------------------------------------------ faults

    def stop_broker(self, broker_id: int) -> None:
        """A clean stop (controlled shutdown first)."""
        broker = self.broker(broker_id)
        self._run(broker.stop())
        self.brokers.remove(broker)

    def kill_broker(self, broker_id: int) -> None:
        """A crash: the session ends at once and nothing is handed over."""
        broker = self.broker(broker_id)
        membership = broker.membership

        async def kill() -> None:
            membership.abandon()
            await broker.stop()
        self._run(kill())
        self.brokers.remove(broker)

    def restart_broker(self, broker_id: int) -> Broker:
        """Starts a stopped or killed broker again on its log dir."""
        broker = self._run(self._launch_broker(broker_id))
        self.brokers.append(broker)
        return broker

    def expire_session(self, broker_id: int) -> None:
        """Expires the broker's coordination session (as ZooKeeper does after a long
        pause); the broker notices, registers again, and runs for controller again."""
        membership = self.broker(broker_id).membership
        assert self.ensemble is not None
        ensemble = self.ensemble

        async def expire() -> None:
            ensemble.expire(membership.require_store().session_id)
        self._run(expire())

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs a coroutine on the brokers' loop and returns its result (for tests)."""
        return self._run(coro)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            coro.close()
            raise RuntimeError("the cluster is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(_START_TIMEOUT_S)


async def _cancel_remaining_tasks() -> None:
    """What the stopped brokers left behind (a controller's channels, cancelled but not yet
    unwound) finishes before the loop closes, so no task dies with it."""
    current = asyncio.current_task()
    remaining = [task for task in asyncio.all_tasks() if task is not current]
    for task in remaining:
        task.cancel()
    if remaining:
        _done, pending = await asyncio.wait(remaining, timeout=_UNWIND_S)
        for task in pending:
            log.warning("a task did not finish within %.0f s of its cancellation: %s",
                        _UNWIND_S, task)


async def _until(condition: Callable[[], bool], timeout_s: float = _START_TIMEOUT_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the cluster did not settle in time")
        await asyncio.sleep(0.01)
