"""Starting a broker. Every broker is a member of a cluster over a coordination store, and
runs the same membership, controller, replica manager and fetchers whatever the store:

- ZooKeeper, with ``zookeeper.connect`` (:func:`zookeeper_connector`);
- without it, a one-broker cluster over the durable local store in the data dir
  (:func:`launch_broker`): the broker registers, wins the election alone and
  runs the controller, as Kafka's KRaft "combined" mode runs one controller code for one
  node and for many;
- the in-memory store of :class:`~kafkalite_server.embedded.EmbeddedCluster`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kafkalite_server.broker import Broker
from kafkalite_server.cluster.cluster_node import ClusterMembership
from kafkalite_server.cluster.controller_requests import ControllerRequests
from kafkalite_server.cluster.coordination import Coordination
from kafkalite_server.cluster.local_store import LocalEnsemble
from kafkalite_server.cluster.meta_properties import ensure_meta_properties
from kafkalite_server.cluster.partition_states import LogDirEventNotifier, PartitionStateStore
from kafkalite_server.cluster.standalone_import import import_standalone_metadata
from kafkalite_server.config import BrokerConfig
from kafkalite_server.security.security_store import SecurityStore

log = logging.getLogger(__name__)

METADATA_DIR = "cluster-metadata"
"""The local store's directory in a standalone broker's data dir."""
STANDALONE_START_WAIT_S = 300.0
"""How long a standalone start waits for its controller's first UpdateMetadata (which
follows the LeaderAndIsr of every partition): the broker leads what it holds by then."""


async def launch_cluster_broker(config: BrokerConfig, connect: Callable[[], Coordination], *,
                                release: Callable[[], None] = lambda: None) -> Broker:
    """Starts one broker of a cluster: it registers, runs for controller, and learns what to
    lead from the elected controller. ``release()`` closes the store once it has left."""
    membership = ClusterMembership(config, connect, release=release)
    cluster_id = membership.open()
    try:
        for log_dir in config.log_dirs:
            ensure_meta_properties(Path(log_dir), config.broker_id, cluster_id)
        requests = ControllerRequests(config, membership.require_store, membership.worker,
                                      lambda: membership.active_controller)
        broker = Broker(config, requests, membership, cluster_id,
                        security_store=SecurityStore(membership.require_store),
                        state_store=PartitionStateStore(membership.require_store,
                                                        membership.worker),
                        log_dir_failures=LogDirEventNotifier(
                            config.broker_id, membership.require_store, membership.worker))
    except BaseException:
        assert membership.store is not None
        membership.store.close()
        release()
        raise
    replicas = broker.replica_manager
    broker.tasks.spawn(requests.follow_config_changes(
        replicas.update_config, lambda: {topic for topic, _ in replicas.partitions}),
        "config-changes")
    try:
        await broker.start()
    except BaseException:
        await broker.stop()
        raise
    return broker


def open_local_store(config: BrokerConfig, data_dir: Path) -> LocalEnsemble:
    """The local store in ``<data_dir>/cluster-metadata/``; on its first open, the metadata
    files a standalone broker of an earlier version left in ``data_dir`` are imported."""
    store = LocalEnsemble.open(data_dir / METADATA_DIR)
    try:
        if store.empty:
            import_standalone_metadata(store, data_dir, config)
    except BaseException:
        store.close()
        raise
    return store


def coordination(config: BrokerConfig, data_dir: Path
                 ) -> tuple[Callable[[], Coordination], Callable[[], None]]:
    """How ``kafkalite-server`` opens sessions on its broker's store, and closes the store:
    ZooKeeper with ``zookeeper.connect``, else the local store of ``data_dir``."""
    if config.zookeeper_connect:
        return zookeeper_connector(config), lambda: None
    store = open_local_store(config, data_dir)
    return lambda: store.connect(config.zookeeper_session_timeout_ms), store.close


async def launch_broker(config: BrokerConfig, data_dir: Path) -> Broker:
    """``kafkalite-server start``. A standalone broker (a one-broker cluster) returns once it
    leads the partitions it holds: its controller's first UpdateMetadata has arrived."""
    connect, release = await asyncio.to_thread(coordination, config, data_dir)
    try:
        broker = await launch_cluster_broker(config, connect, release=release)
    except BaseException:
        release()
        raise
    if not config.zookeeper_connect and not await broker.metadata_cache.wait_first_update(
            STANDALONE_START_WAIT_S):
        log.warning("broker %d: no word from its controller within %.0f s of starting",
                    config.broker_id, STANDALONE_START_WAIT_S)
    return broker


@contextmanager
def coordination_session(config: BrokerConfig, data_dir: Path) -> Iterator[Coordination]:
    """One session on the broker's store, for a command run beside the broker (``scram-user``
    bootstraps the first user into it before the broker starts)."""
    connect, release = coordination(config, data_dir)
    try:
        session = connect()
        try:
            yield session
        finally:
            session.close()
    finally:
        release()


def zookeeper_connector(config: BrokerConfig) -> Callable[[], Coordination]:
    """Sessions on the ZooKeeper named by ``zookeeper.connect`` (kazoo loads only here)."""
    from kafkalite_server.cluster.zk_store import ZooKeeperCoordination

    assert config.zookeeper_connect is not None
    connect = config.zookeeper_connect
    return lambda: ZooKeeperCoordination(
        connect, session_timeout_ms=config.zookeeper_session_timeout_ms,
        connection_timeout_ms=config.zookeeper_connection_timeout_ms)
