"""The transaction coordinator inside a running broker.

Puts the sans-IO :class:`TransactionCoordinator` on the coordinator runtime of
``__transaction_state`` (created on first use, compacted, Kafka's internal-topic
settings; loaded on leadership), with markers through :class:`BrokerMarkerSender`,
KIP-890's verification (:class:`TransactionVerifier`), and the timers (aborting timed-out
transactions, expiring idle transactional ids, aborting hanging transactions on
partitions led here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalite_server.cluster.internal_topics import internal_replication_factor
from kafkalite_server.cluster.peer_requests import PeerRequests
from kafkalite_server.coordinator.runtime import CoordinatorRuntime, InternalTopic
from kafkalite_server.txn.config import TRANSACTION_STATE_TOPIC, TxnConfig
from kafkalite_server.txn.coordinator import TransactionCoordinator
from kafkalite_server.txn.hanging import HangingTransactions
from kafkalite_server.txn.log_store import TxnLogStore
from kafkalite_server.txn.markers import BrokerMarkerSender
from kafkalite_server.txn.verification import TransactionVerifier

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

STATE_WRITE_TIMEOUT_MS = 30_000
"""How long a state write may wait for the ISR (Kafka's coordinator uses request.timeout.ms)."""


class TransactionCoordinatorService:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.config = config = TxnConfig.from_broker_config(broker.config)
        self.runtime = CoordinatorRuntime(
            InternalTopic(
                TRANSACTION_STATE_TOPIC, config.num_partitions,
                replication_factor=lambda: internal_replication_factor(
                    TRANSACTION_STATE_TOPIC, "transaction.state.log.replication.factor",
                    config.replication_factor, len(broker.metadata_cache.brokers)),
                configs=lambda replicas: {
                    "cleanup.policy": "compact", "segment.bytes": str(config.segment_bytes),
                    "min.insync.replicas": str(min(config.min_isr, replicas))},
                commit_timeout_ms=STATE_WRITE_TIMEOUT_MS),
            replicas=broker.replica_manager, metadata=broker.metadata_cache,
            controller=broker.controller, spawn=broker.tasks.spawn)
        self.markers = BrokerMarkerSender(broker, self.runtime)
        self.coordinator = TransactionCoordinator(
            config, TxnLogStore(self.runtime, broker.now_ms), self.markers,
            broker.controller.producer_ids.allocate, broker.now_ms,
            ownership=self.runtime.ownership)
        self.markers.coordinator = self.coordinator
        self.verifier = TransactionVerifier(
            broker, PeerRequests(broker.peer_security, f"txn-verification-{broker.node_id}"),
            enabled=config.partition_verification)
        self.hanging = HangingTransactions(broker, config.max_timeout_ms, broker.now_ms)
        self.runtime.serve(self.coordinator)

    def start(self) -> None:
        tasks = self._broker.tasks
        tasks.every(self.config.abort_check_interval_ms, "abort-timed-out-transactions",
                    self._abort_timed_out)
        tasks.every(self.config.expiration_check_interval_ms, "expire-transactional-ids",
                    self._expire)
        tasks.every(self.config.abort_check_interval_ms, "abort-hanging-transactions",
                    self.hanging.abort_overdue)

    def shutdown(self) -> None:
        """Closes the connections to other brokers."""
        for sender in (self.markers, self.verifier, self.hanging):
            sender.peers.close()

    async def _abort_timed_out(self) -> None:
        self.coordinator.abort_timed_out()

    async def _expire(self) -> None:
        self.coordinator.expire_idle()

    async def durable(self, transactional_id: str, error: int = 0) -> int:
        """The answer to a request the coordinator decided with ``error``: a success waits
        until the id's state is in the ISR of its partition, so a coordinator that fails
        right after answering leaves its successor the state it promised."""
        return error or await self.runtime.committed(transactional_id)


def install(broker: Broker) -> TransactionCoordinatorService:
    return TransactionCoordinatorService(broker)
