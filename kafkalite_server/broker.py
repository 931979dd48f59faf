"""One broker: its log manager, replica manager, metadata cache, handlers, listener and
background tasks.

The group coordinator registers its handlers the same way core handlers are registered
(``broker.handlers.register(api_key, handler)``), and ApiVersions advertises exactly what is
registered. A handler gets ``ctx.broker`` and from it ``config``, ``metadata_cache`` (the
broker's own view of the cluster), ``controller`` (requests to the controller:
``create_topic`` ...), ``replica_manager`` (``append_records``, ``fetch_messages``,
``leader_partition``) and ``tasks`` (``spawn`` background work). The controller reaches the
broker only through ``inbox`` (LeaderAndIsr, StopReplica, UpdateMetadata).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from kafkalite.protocol import ApiKey
from kafkalite_server.cancellation import cancel_and_wait
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.cluster_node import ClusterMembership
from kafkalite_server.cluster.controller_client import ControllerClient
from kafkalite_server.cluster.inbox import ControllerInbox
from kafkalite_server.cluster.metadata_cache import MetadataCache
from kafkalite_server.config import BrokerConfig
from kafkalite_server.group.broker_handlers import install as install_group_coordinator
from kafkalite_server.handlers import (
    acls,
    admin,
    client_quotas,
    cluster,
    configs,
    elections,
    fetch,
    groups,
    inter_broker,
    metadata,
    offsets,
    produce,
    producer_id,
    reassignments,
    records,
    sasl,
    scram_users,
    topic_partitions,
    transactions,
)
from kafkalite_server.handlers.api_versions import handle_api_versions
from kafkalite_server.handlers.registry import HandlerRegistry
from kafkalite_server.log.down_conversion import DownConversionBudget
from kafkalite_server.log.log import wall_clock_ms
from kafkalite_server.log.manager import LogManager
from kafkalite_server.metrics.endpoint import MetricsEndpoint
from kafkalite_server.metrics.requests import RequestCounters
from kafkalite_server.network.connection import ConnectionLimits, serve_connection
from kafkalite_server.network.listeners import Listener
from kafkalite_server.network.server import ListenerSet
from kafkalite_server.quotas.client_quota_store import ClientQuotaStore
from kafkalite_server.quotas.client_throttle import ClientThrottles
from kafkalite_server.quotas.replication import broker_quotas
from kafkalite_server.replication.fetcher import FetcherSettings
from kafkalite_server.replication.isr_store import IsrStore
from kafkalite_server.replication.log_dir_failure import LogDirFailureReporter
from kafkalite_server.replication.replica_manager import ReplicaManager, ReplicationSettings
from kafkalite_server.security.broker_security import BrokerSecurity
from kafkalite_server.security.inter_broker import PeerSecurity, peer_security
from kafkalite_server.security.security_store import SecurityStore
from kafkalite_server.share.broker_handlers import install as install_share_groups
from kafkalite_server.txn.service import install as install_txn_coordinator

log = logging.getLogger(__name__)

CORE_HANDLERS = {
    ApiKey.API_VERSIONS: handle_api_versions,
    ApiKey.METADATA: metadata.handle_metadata,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: topic_partitions.handle_describe_topic_partitions,
    ApiKey.PRODUCE: produce.handle_produce,
    ApiKey.FETCH: fetch.handle_fetch,
    ApiKey.LIST_OFFSETS: offsets.handle_list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offsets.handle_offset_for_leader_epoch,
    ApiKey.INIT_PRODUCER_ID: producer_id.handle_init_producer_id,
    ApiKey.CREATE_TOPICS: admin.handle_create_topics,
    ApiKey.DELETE_TOPICS: admin.handle_delete_topics,
    ApiKey.CREATE_PARTITIONS: admin.handle_create_partitions,
    ApiKey.LEADER_AND_ISR: inter_broker.handle_leader_and_isr,
    ApiKey.STOP_REPLICA: inter_broker.handle_stop_replica,
    ApiKey.UPDATE_METADATA: inter_broker.handle_update_metadata,
    ApiKey.CONTROLLED_SHUTDOWN: inter_broker.handle_controlled_shutdown,
    ApiKey.DESCRIBE_CONFIGS: configs.handle_describe_configs,
    ApiKey.ALTER_CONFIGS: configs.handle_alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.handle_incremental_alter_configs,
    ApiKey.DELETE_RECORDS: records.handle_delete_records,
    ApiKey.DESCRIBE_CLUSTER: cluster.handle_describe_cluster,
    ApiKey.DESCRIBE_LOG_DIRS: cluster.handle_describe_log_dirs,
    ApiKey.DESCRIBE_ACLS: acls.handle_describe_acls,
    ApiKey.CREATE_ACLS: acls.handle_create_acls,
    ApiKey.DELETE_ACLS: acls.handle_delete_acls,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: client_quotas.handle_describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: client_quotas.handle_alter_client_quotas,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: scram_users.handle_describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: scram_users.handle_alter_user_scram_credentials,
    ApiKey.ELECT_LEADERS: elections.handle_elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: reassignments.handle_alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: reassignments.handle_list_partition_reassignments,
    ApiKey.ADD_PARTITIONS_TO_TXN: transactions.handle_add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: transactions.handle_add_offsets_to_txn,
    ApiKey.END_TXN: transactions.handle_end_txn,
    ApiKey.WRITE_TXN_MARKERS: transactions.handle_write_txn_markers,
    ApiKey.TXN_OFFSET_COMMIT: groups.handle_txn_offset_commit,
    ApiKey.DESCRIBE_PRODUCERS: transactions.handle_describe_producers,
    ApiKey.DESCRIBE_TRANSACTIONS: transactions.handle_describe_transactions,
    ApiKey.LIST_TRANSACTIONS: transactions.handle_list_transactions,
}

SASL_HANDLERS = {
    ApiKey.SASL_HANDSHAKE: sasl.handle_sasl_handshake,
    ApiKey.SASL_AUTHENTICATE: sasl.handle_sasl_authenticate,
}
"""Registered (and advertised) when a listener uses SASL."""


class Broker:
    def __init__(self, config: BrokerConfig, controller: ControllerClient,
                 membership: ClusterMembership, cluster_id: str, *, security_store: SecurityStore,
                 state_store: IsrStore, log_dir_failures: LogDirFailureReporter,
                 now_ms: Callable[[], int] = wall_clock_ms) -> None:
        """``security_store`` keeps ACLs and SCRAM credentials, ``state_store`` takes the
        ISR changes of partitions this broker leads (both in the coordination store);
        ``log_dir_failures`` tells the controller of a failed log directory."""
        self.config = config
        self.controller = controller
        self.membership = membership
        self.now_ms = now_ms
        self.listeners = ListenerSet(config)
        self.security = BrokerSecurity(config, self.listeners.listeners, security_store,
                                       membership.worker)
        self.peer_security = peer_security(config)
        """How this broker connects to the others (fetchers, WriteTxnMarkers)."""
        self.handlers = HandlerRegistry()
        self.request_counters = RequestCounters()
        """Requests and their latencies, counted by the network dispatch."""
        for api_key, handler in CORE_HANDLERS.items():
            self.handlers.register(api_key, handler)
        if self.listeners.uses_sasl:
            for api_key, handler in SASL_HANDLERS.items():
                self.handlers.register(api_key, handler)
        self.log_manager = LogManager([Path(d) for d in config.log_dirs],
                                      controller.default_log_config, now_ms=now_ms,
                                      topic_config=controller.topic_config,
                                      cleaner_config=config.cleaner_config(),
                                      open_files_max=config.kafkalite_log_open_files_max,
                                      producer_expiration_ms=config.producer_id_expiration_ms,
                                      batch_decompressed_max_bytes=(
                                          config.kafkalite_batch_decompressed_max_bytes))
        self.metadata_cache = MetadataCache(config.broker_id, cluster_id)
        self.replica_manager = ReplicaManager(
            config.broker_id, self.log_manager, self.metadata_cache, controller.topic_config,
            state_store, replication_settings(config, self.peer_security),
            log_dir_failures=log_dir_failures, quotas=broker_quotas(
                config.broker_id, lambda: controller.dynamic_configs, controller.topic_config),
            now_ms=now_ms)
        self.inbox = ControllerInbox(self.replica_manager, self.metadata_cache, membership,
                                     controller.load_topic_configs)
        self.down_conversion = DownConversionBudget(config.fetch_max_bytes)
        """Down-converted records (Fetch v0-3) held by responses, in all."""
        self.tasks = BackgroundTasks()
        self.port = 0
        self._connections: set[asyncio.Task[None]] = set()
        self._accepting = True
        """False once :meth:`stop` began: a connection the listener accepted just before it
        closed reaches :meth:`_on_connection` a loop turn later, after the connections were
        dropped, and must be closed, not served by a stopped broker."""
        self.connection_limits = ConnectionLimits(config)
        self.client_quotas = ClientQuotaStore(membership.require_store, membership.worker)
        self.client_throttles = ClientThrottles(lambda: self.client_quotas.quotas,
                                                config.quota_window_size_seconds,
                                                config.quota_window_num)
        """Byte rates measured against client quotas (the network dispatch records them)."""
        self.metrics = (MetricsEndpoint(config.kafkalite_metrics_listener)
                        if config.kafkalite_metrics_listener else None)
        """The Prometheus endpoint (``kafkalite.metrics.listener``), if one is set."""
        self.group_coordinator = install_group_coordinator(self)
        self.txn_coordinator = install_txn_coordinator(self)
        self.share = install_share_groups(self)

    @property
    def node_id(self) -> int:
        return self.config.broker_id

    @property
    def endpoint(self) -> BrokerEndpoint:
        """The inter-broker listener's advertised address, with every listener's."""
        advertised = self.listeners.advertised()
        _name, host, port, _protocol = advertised[0]
        return BrokerEndpoint(self.node_id, host, port, self.config.broker_rack, advertised)

    @property
    def accepting(self) -> bool:
        """Serving clients: false once :meth:`stop` began."""
        return self._accepting

    def address(self, listener: str) -> str:
        """``host:port`` clients use for the named listener."""
        for name, host, port, _protocol in self.listeners.advertised():
            if name == listener.upper():
                return f"{host}:{port}"
        raise KeyError(f"broker {self.node_id} has no listener {listener!r}")

    async def start(self) -> None:
        """Binds the listeners, then joins the cluster (the controller then tells the broker
        what it leads)."""
        await self.listeners.start(self._on_connection)
        self.port = self.listeners.ports[self.listeners.inter_broker.name]
        if self.metrics is not None:
            self.metrics.start(self)
        self._start_maintenance()
        self.replica_manager.watch_log_dirs(asyncio.get_running_loop())
        self.txn_coordinator.start()
        self.share.start()
        self.log_manager.start_cleaner(self.replica_manager.high_watermark_of)
        await self.membership.join(self.endpoint, self.inbox)
        await self.security.load()
        await self.client_quotas.load()
        self.tasks.spawn(self.client_quotas.follow_changes(), "client-quota-changes")

    def _on_connection(self, listener: Listener, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
        if not self._accepting:
            writer.transport.abort()  # the client fails its requests now, not at a timeout
            return
        task = asyncio.get_running_loop().create_task(
            serve_connection(self, listener, reader, writer))
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)
        # A task cancelled before its first step never reaches serve_connection's own close.
        task.add_done_callback(lambda _task: writer.close())

    def _start_maintenance(self) -> None:
        config = self.config
        manager = self.log_manager
        self.tasks.every(config.log_retention_check_interval_ms, "retention",
                         lambda: _sync(manager.run_retention,
                                       self.replica_manager.high_watermark_of))
        self.tasks.every(config.log_flush_offset_checkpoint_interval_ms, "checkpoints",
                         lambda: _sync(self._checkpoint))
        replicas = self.replica_manager
        self.tasks.every(max(config.replica_lag_time_max_ms // 2, 1), "isr-shrink",
                         lambda: _sync(replicas.maybe_shrink_isr))
        self.tasks.every(config.replica_high_watermark_checkpoint_interval_ms,
                         "high-watermark-checkpoint",
                         lambda: _sync(replicas.checkpoint_high_watermarks))
        self.tasks.every(config.producer_id_expiration_check_interval_ms, "producer-expiration",
                         lambda: _sync(manager.remove_expired_producers))
        flush_ms = config.log_flush_interval_ms
        self.tasks.every(min(flush_ms or 1000, 1000), "flush",
                         lambda: asyncio.to_thread(manager.flush_dirty, self.now_ms()))

    def _checkpoint(self) -> None:
        self.log_manager.checkpoint_recovery_points()
        self.log_manager.checkpoint_log_start_offsets()

    async def stop(self) -> None:
        """Moves leadership away, stops listening, drops connections, stops fetching,
        then leaves the cluster and shuts the logs down cleanly. Leaving comes after
        fetching stops, as in Kafka: a fetch from a broker that is no longer registered
        could take it back into an ISR."""
        await self.membership.hand_over(self.node_id)
        self._accepting = False
        if self.metrics is not None:
            await self.metrics.stop()
        await self.listeners.close()
        await cancel_and_wait(list(self._connections))
        self.group_coordinator.shutdown()
        self.share.shutdown()
        await self.tasks.cancel_all()
        self.txn_coordinator.shutdown()
        await self.replica_manager.shutdown()
        await self.membership.leave(self.node_id)
        await self.listeners.wait_closed()
        self.log_manager.shutdown()


def replication_settings(config: BrokerConfig, security: PeerSecurity) -> ReplicationSettings:
    return ReplicationSettings(config.replica_lag_time_max_ms, FetcherSettings(
        wait_max_ms=config.replica_fetch_wait_max_ms, min_bytes=config.replica_fetch_min_bytes,
        max_bytes=config.replica_fetch_max_bytes,
        response_max_bytes=config.replica_fetch_response_max_bytes,
        backoff_ms=config.replica_fetch_backoff_ms,
        socket_timeout_ms=config.replica_socket_timeout_ms,
        security=security))


class BackgroundTasks:
    """Periodic and one-off tasks of a broker, cancelled together at shutdown."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Awaitable[None], name: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def every(self, interval_ms: int, name: str,
              action: Callable[[], Awaitable[object]]) -> asyncio.Task[None]:
        async def repeat() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                try:
                    await action()
                except Exception:
                    log.exception("background task %s failed", name)
        return self.spawn(repeat(), name)

    async def cancel_all(self) -> None:
        await cancel_and_wait(list(self._tasks))


async def _sync(function: Callable[..., object], *args: object) -> None:
    """Runs quick disk work on the loop (it touches log state the loop owns)."""
    function(*args)
