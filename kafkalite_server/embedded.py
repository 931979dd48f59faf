"""EmbeddedCluster: N brokers inside the current process, on free loopback ports.

All brokers run on one asyncio loop in one background thread and share one controller,
so they share one metadata image (every broker answers Metadata for the whole cluster).
Layout of ``data_dir``: ``cluster-metadata.json`` and ``producer-id-block`` at the top,
``broker-<id>/`` as each broker's log dir (with its ``meta.properties``).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from kafkalite_server.broker import Broker
from kafkalite_server.cluster.controller import Controller
from kafkalite_server.cluster.image import BrokerEndpoint, PartitionInfo
from kafkalite_server.cluster.messages import BrokerChannel
from kafkalite_server.cluster.meta_properties import ensure_meta_properties, read_meta_properties
from kafkalite_server.config import BrokerConfig

T = TypeVar("T")
_START_TIMEOUT_S = 60


@dataclass
class LocalMembership:
    """Joining and leaving the in-process controller of a standalone broker (or of the
    brokers of a single-controller EmbeddedCluster)."""

    controller: Controller

    async def join(self, endpoint: BrokerEndpoint, channel: BrokerChannel) -> None:
        self.controller.register_broker(endpoint, channel)

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


async def stop_brokers(brokers: list[Broker]) -> None:
    for broker in brokers:
        await broker.stop()


class EmbeddedCluster:
    """A context manager; ``bootstrap_servers`` is ready once ``start()`` returns."""

    def __init__(self, num_brokers: int = 1, data_dir: str | Path | None = None,
                 config: Mapping[str, str] | None = None) -> None:
        if num_brokers < 1:
            raise ValueError("an EmbeddedCluster needs at least one broker")
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
            self.controller, self.brokers = self._run(launch_brokers(configs, self.data_dir))
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

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            self._run(stop_brokers(self.brokers))
        finally:
            self._shutdown_loop()
            self.brokers = []
            if self._given_dir is None and self.data_dir is not None:
                shutil.rmtree(self.data_dir, ignore_errors=True)

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
