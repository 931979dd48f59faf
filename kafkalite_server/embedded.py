"""EmbeddedCluster: N brokers inside the current process, on free loopback ports.

All brokers run on one asyncio loop in one background thread. By default they share one
controller (a standalone broker's); with ``coordination="memory"`` they form a real cluster
over the in-memory coordination backend (registration, election, leader election).
Layout of ``data_dir``: ``cluster-metadata.json`` and ``producer-id-block`` at the top,
``broker-<id>/`` as each broker's log dir (with its ``meta.properties``).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from kafkalite_server.broker import Broker
from kafkalite_server.cluster.cluster_node import ClusterMembership
from kafkalite_server.cluster.controller import Controller
from kafkalite_server.cluster.coordination import Coordination
from kafkalite_server.cluster.image import BrokerEndpoint, PartitionInfo
from kafkalite_server.cluster.memory_store import MemoryEnsemble
from kafkalite_server.cluster.messages import BrokerChannel
from kafkalite_server.cluster.meta_properties import ensure_meta_properties, read_meta_properties
from kafkalite_server.cluster.zk_admin import ZkAdmin
from kafkalite_server.config import BrokerConfig
from kafkalite_server.replication.isr_store import ZkPartitionStateStore

T = TypeVar("T")
_START_TIMEOUT_S = 60
_TICK_S = 0.1


@dataclass
class LocalMembership:
    """Joining and leaving the in-process controller of a standalone broker (or of the
    brokers of a single-controller EmbeddedCluster)."""

    controller: Controller

    async def join(self, endpoint: BrokerEndpoint, channel: BrokerChannel) -> None:
        self.controller.register_broker(endpoint, channel)

    async def hand_over(self, node_id: int) -> None:
        """The shared controller moves leaderships when the broker leaves."""

    async def leave(self, node_id: int) -> None:
        self.controller.unregister_broker(node_id)


async def launch_brokers(configs: list[BrokerConfig], metadata_dir: Path
                         ) -> tuple[Controller, list[Broker]]:
    """Starts brokers sharing one controller, then gives each its partitions to lead."""
    known = read_meta_properties(Path(configs[0].log_dirs[0]))
    controller = Controller(configs[0], metadata_dir, known.get("cluster.id"))
    brokers = []
    try:
        for config in configs:
            for log_dir in config.log_dirs:
                ensure_meta_properties(Path(log_dir), config.broker_id,
                                       controller.image.cluster_id)
            broker = Broker(config, controller, LocalMembership(controller),
                            controller.image.cluster_id)
            brokers.append(broker)
            await broker.start()
        controller.elect_leaders()
    except BaseException:
        await stop_brokers(brokers)
        raise
    return controller, brokers


async def launch_cluster_broker(config: BrokerConfig,
                                connect: Callable[[], Coordination]) -> Broker:
    """Starts one broker of a ZooKeeper-mode cluster (or of an in-memory one): it
    registers, runs for controller, and learns what to lead from the elected controller."""
    membership = ClusterMembership(config, connect)
    cluster_id = membership.open()
    try:
        for log_dir in config.log_dirs:
            ensure_meta_properties(Path(log_dir), config.broker_id, cluster_id)
        admin = ZkAdmin(config, membership.require_store, lambda: membership.active_controller)
        broker = Broker(config, admin, membership, cluster_id,
                        state_store=ZkPartitionStateStore(membership.require_store))
    except BaseException:
        assert membership.store is not None
        membership.store.close()
        raise
    replicas = broker.replica_manager
    broker.tasks.spawn(admin.follow_config_changes(
        replicas.update_config, lambda: {topic for topic, _ in replicas.partitions}),
        "config-changes")
    try:
        await broker.start()
    except BaseException:
        await broker.stop()
        raise
    return broker


def zookeeper_connector(config: BrokerConfig) -> Callable[[], Coordination]:
    """Sessions on the ZooKeeper named by ``zookeeper.connect`` (kazoo loads only here)."""
    from kafkalite_server.cluster.zk_store import ZooKeeperCoordination

    assert config.zookeeper_connect is not None
    connect = config.zookeeper_connect
    return lambda: ZooKeeperCoordination(
        connect, session_timeout_ms=config.zookeeper_session_timeout_ms,
        connection_timeout_ms=config.zookeeper_connection_timeout_ms)


async def stop_brokers(brokers: list[Broker]) -> None:
    for broker in brokers:
        await broker.stop()


class EmbeddedCluster:
    """A context manager; ``bootstrap_servers`` is ready once ``start()`` returns."""

    def __init__(self, num_brokers: int = 1, data_dir: str | Path | None = None,
                 config: Mapping[str, str] | None = None, *,
                 coordination: str = "controller") -> None:
        """``coordination="memory"`` runs the brokers as a real cluster (registration,
        controller election, leader election) over the in-memory coordination backend;
        the default shares one in-process controller (a standalone broker's)."""
        if num_brokers < 1:
            raise ValueError("an EmbeddedCluster needs at least one broker")
        if coordination not in ("controller", "memory"):
            raise ValueError(f"coordination must be 'controller' or 'memory', "
                             f"not {coordination!r}")
        self.coordination = coordination
        self.ensemble: MemoryEnsemble | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.num_brokers = num_brokers
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self._settings = {key: str(value) for key, value in (config or {}).items()}
        self.data_dir: Path | None = None
        self.brokers: list[Broker] = []
        self.controller: Controller | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> EmbeddedCluster:
        if self._loop is not None:
            return self
        self.data_dir = self._given_dir or Path(tempfile.mkdtemp(prefix="kafkalite-"))
        configs = [self._broker_config(broker_id) for broker_id in range(self.num_brokers)]
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="kafkalite-embedded",
                                        daemon=True)
        self._thread.start()
        try:
            if self.coordination == "memory":
                self.brokers = self._run(self._launch_memory_cluster(configs))
            else:
                self.controller, self.brokers = self._run(launch_brokers(configs,
                                                                         self.data_dir))
        except BaseException:
            self._shutdown_loop()
            raise
        return self

    def _broker_config(self, broker_id: int) -> BrokerConfig:
        assert self.data_dir is not None
        settings = {"host.name": "127.0.0.1", "port": "0", **self._settings,
                    "broker.id": str(broker_id),
                    "log.dirs": str(self.data_dir / f"broker-{broker_id}")}
        return BrokerConfig.from_properties(settings)

    async def _launch_memory_cluster(self, configs: list[BrokerConfig]) -> list[Broker]:
        self.ensemble = ensemble = MemoryEnsemble()
        self._ticker = asyncio.get_running_loop().create_task(self._tick(ensemble))
        brokers: list[Broker] = []
        try:
            for config in configs:
                brokers.append(await launch_cluster_broker(
                    config, lambda c=config: ensemble.connect(c.zookeeper_session_timeout_ms)))
            await _until(lambda: all(len(b.metadata_cache.brokers) == len(brokers)
                                     for b in brokers))
        except BaseException:
            await stop_brokers(brokers)
            raise
        return brokers

    @staticmethod
    async def _tick(ensemble: MemoryEnsemble) -> None:
        while True:
            await asyncio.sleep(_TICK_S)
            ensemble.tick()

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            if self._ticker is not None:
                self._ticker.cancel()
            self._run(self._stop_all())
        finally:
            self._shutdown_loop()
            self.brokers = []
            if self._given_dir is None and self.data_dir is not None:
                shutil.rmtree(self.data_dir, ignore_errors=True)

    async def _stop_all(self) -> None:
        """The whole cluster stops: no broker hands leadership to another that is about
        to stop too (each still closes its logs cleanly)."""
        for broker in self.brokers:
            if isinstance(broker.membership, ClusterMembership):
                broker.membership.abandon()
        await stop_brokers(self.brokers)

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

    def move_partition_leader(self, topic: str, partition: int, broker_id: int) -> PartitionInfo:
        """Moves the partition's log to ``broker_id`` and bumps its leader epoch; the old
        leader then answers NOT_LEADER_OR_FOLLOWER for it. Runs on the brokers' loop."""
        controller = self._require_controller()
        brokers = {broker.node_id: broker for broker in self.brokers}

        def transfer(old: int, new: int) -> None:
            copy_log(brokers[old], brokers[new], topic, partition)

        async def move() -> PartitionInfo:
            return controller.move_partition_leader(topic, partition, broker_id, transfer)
        return self._run(move())

    # ------------------------------------------------------------------ faults (memory mode)

    def broker(self, broker_id: int) -> Broker:
        for broker in self.brokers:
            if broker.node_id == broker_id:
                return broker
        raise KeyError(f"no running broker {broker_id}")

    def _membership(self, broker_id: int) -> ClusterMembership:
        membership = self.broker(broker_id).membership
        if not isinstance(membership, ClusterMembership) or self.ensemble is None:
            raise RuntimeError("only an EmbeddedCluster(coordination='memory') has sessions")
        return membership

    @property
    def controller_id(self) -> int:
        """The broker that is the active controller now (-1 if none)."""
        for broker in self.brokers:
            membership = broker.membership
            if isinstance(membership, ClusterMembership) and membership.active_controller:
                return broker.node_id
        return -1

    def stop_broker(self, broker_id: int) -> None:
        """A clean stop (controlled shutdown first)."""
        broker = self.broker(broker_id)
        self._run(broker.stop())
        self.brokers.remove(broker)

    def kill_broker(self, broker_id: int) -> None:
        """A crash: the session ends at once and nothing is handed over."""
        membership = self._membership(broker_id)
        broker = self.broker(broker_id)

        async def kill() -> None:
            membership.abandon()
            await broker.stop()
        self._run(kill())
        self.brokers.remove(broker)

    def restart_broker(self, broker_id: int) -> Broker:
        """Starts a stopped or killed broker again on its log dir."""
        assert self.ensemble is not None and self.data_dir is not None
        ensemble = self.ensemble
        config = self._broker_config(broker_id)
        broker = self._run(launch_cluster_broker(
            config, lambda: ensemble.connect(config.zookeeper_session_timeout_ms)))
        self.brokers.append(broker)
        return broker

    def expire_session(self, broker_id: int) -> None:
        """Expires the broker's coordination session (as ZooKeeper does after a long
        pause); the broker notices, registers again, and runs for controller again."""
        membership = self._membership(broker_id)
        assert self.ensemble is not None
        ensemble = self.ensemble

        async def expire() -> None:
            ensemble.expire(membership.require_store().session_id)
        self._run(expire())

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs a coroutine on the brokers' loop and returns its result (for tests)."""
        return self._run(coro)

    def _require_controller(self) -> Controller:
        if self.controller is None:
            raise RuntimeError("the cluster is not running")
        return self.controller

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            coro.close()
            raise RuntimeError("the cluster is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(_START_TIMEOUT_S)


def copy_log(source: Broker, target: Broker, topic: str, partition: int) -> None:
    """Stands in for replication at replication factor one: the stopped replica's files
    move to the new leader's log dir."""
    log = source.log_manager.get_log(topic, partition)
    if log is None:
        return
    log.flush()
    shutil.copytree(log.directory, target.log_manager.log_dirs[0] / log.directory.name,
                    dirs_exist_ok=False, ignore=shutil.ignore_patterns("*.deleted"))
    source.log_manager.delete_log(topic, partition)


async def _until(condition: Callable[[], bool], timeout_s: float = _START_TIMEOUT_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the cluster did not settle in time")
        await asyncio.sleep(0.01)
