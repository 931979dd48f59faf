"""Starting a broker: standalone (its own in-process controller) or as one broker of a
cluster over a coordination store (ZooKeeper, or the in-memory store of EmbeddedCluster).

``kafkalite-server start`` and :class:`~kafkalite_server.embedded.EmbeddedCluster` both
start brokers through here, so every deployment runs the same broker code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkalite.protocol.errors import NotControllerError
from kafkalite_server.broker import Broker
from kafkalite_server.cluster.cluster_node import ClusterMembership
from kafkalite_server.cluster.controller import CONTROLLER_EPOCH, Controller
from kafkalite_server.cluster.coordination import Coordination
from kafkalite_server.cluster.image import BrokerEndpoint
from kafkalite_server.cluster.inbox import ControllerInbox, LocalChannel
from kafkalite_server.cluster.messages import NO_BROKER_EPOCH
from kafkalite_server.cluster.meta_properties import ensure_meta_properties, read_meta_properties
from kafkalite_server.cluster.partition_states import (
    ZkLogDirFailureReporter,
    ZkPartitionStateStore,
)
from kafkalite_server.cluster.zk_admin import ZkAdmin
from kafkalite_server.config import BrokerConfig


@dataclass
class LocalMembership:
    """Joining and leaving the in-process controller of a standalone broker."""

    controller: Controller
    broker_epoch = NO_BROKER_EPOCH
    """The standalone controller reaches its broker in process, never as another
    incarnation."""

    async def controller_epoch_exists(self, epoch: int) -> bool:
        return epoch <= CONTROLLER_EPOCH

    async def controlled_shutdown(self, broker_id: int,
                                  broker_epoch: int) -> list[tuple[str, int]]:
        raise NotControllerError("a standalone broker's controller takes no "
                                 "ControlledShutdown from other brokers")

    async def join(self, endpoint: BrokerEndpoint, inbox: ControllerInbox) -> None:
        self.controller.register_broker(endpoint, LocalChannel(inbox))

    async def hand_over(self, node_id: int) -> None:
        """A standalone broker has no other broker to hand its leaderships to."""

    async def leave(self, node_id: int) -> None:
        self.controller.unregister_broker(node_id)


async def launch_standalone_broker(config: BrokerConfig, metadata_dir: Path) -> Broker:
    """Starts a broker with its own controller (no ``zookeeper.connect``); the topics live
    in ``metadata_dir``."""
    known = read_meta_properties(Path(config.log_dirs[0]))
    controller = Controller(config, metadata_dir, known.get("cluster.id"))
    for log_dir in config.log_dirs:
        ensure_meta_properties(Path(log_dir), config.broker_id, controller.image.cluster_id)
    broker = Broker(config, controller, LocalMembership(controller),
                    controller.image.cluster_id)
    try:
        await broker.start()
        controller.elect_leaders()
    except BaseException:
        await broker.stop()
        raise
    return broker


async def launch_cluster_broker(config: BrokerConfig,
                                connect: Callable[[], Coordination]) -> Broker:
    """Starts one broker of a ZooKeeper-mode cluster (or of an in-memory one): it
    registers, runs for controller, and learns what to lead from the elected controller."""
    membership = ClusterMembership(config, connect)
    cluster_id = membership.open()
    try:
        for log_dir in config.log_dirs:
            ensure_meta_properties(Path(log_dir), config.broker_id, cluster_id)
        admin = ZkAdmin(config, membership.require_store, membership.worker,
                        lambda: membership.active_controller)
        broker = Broker(config, admin, membership, cluster_id,
                        state_store=ZkPartitionStateStore(membership.require_store,
                                                          membership.worker),
                        log_dir_failures=ZkLogDirFailureReporter(
                            config.broker_id, membership.require_store, membership.worker))
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
