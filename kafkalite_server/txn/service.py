"""The transaction coordinator inside a running broker.

Ties the sans-IO :class:`TransactionCoordinator` to the broker: its state on
``__transaction_state`` (created on first use, compacted, Kafka's internal-topic
settings), ownership that follows leadership of that topic's partitions (loading replays
the partition's log), markers through :class:`BrokerMarkerSender`, and the two timers
(aborting timed-out transactions, expiring idle transactional ids).
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from kafkalite.protocol.errors import (
    BrokerResponseError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    TopicAlreadyExistsError,
)
from kafkalite.records import encode_batch
from kafkalite_server.cluster.cluster_node import ClusterMembership
from kafkalite_server.cluster.image import BrokerEndpoint
from kafkalite_server.cluster.internal_topics import internal_replication_factor
from kafkalite_server.group.log_store import read_log_chunks
from kafkalite_server.replication.replica_manager import ReplicaManager
from kafkalite_server.txn.config import TRANSACTION_STATE_TOPIC, TxnConfig
from kafkalite_server.txn.coordinator import TransactionCoordinator
from kafkalite_server.txn.log_records import (
    TransactionLogFormatError,
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kafkalite_server.txn.markers import BrokerMarkerSender

if TYPE_CHECKING:
    from collections.abc import Callable

    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

STATE_WRITE_TIMEOUT_MS = 30_000
"""How long a state write may wait for the ISR (Kafka's coordinator uses request.timeout.ms)."""


class TxnLogStore:
    """One record batch per state change, appended to the id's partition. The append
    returns at once; :meth:`await_replicated` is the wait for the ISR (Kafka's acks=all
    append), which every answer and every marker waits for."""

    def __init__(self, replicas: ReplicaManager, now_ms: Callable[[], int]) -> None:
        self._replicas = replicas
        self._now_ms = now_ms
        self._last_appended: dict[int, int] = {}
        """``__transaction_state`` partition -> offset of the last state written there."""

    def write(self, partition: int, transactional_id: str, value: TxnLogValue | None) -> None:
        batch = encode_batch([(encode_key(transactional_id),
                               None if value is None else encode_value(value),
                               self._now_ms(), ())])
        info = self._replicas.append_local(TRANSACTION_STATE_TOPIC, partition,
                                           memoryview(bytearray(batch)))
        self._last_appended[partition] = info.last_offset

    def loaded(self, partition: int, log_end_offset: int) -> None:
        """A partition loaded as its new leader: its states count as written now, so markers
        of a loaded PrepareCommit/PrepareAbort wait until this leader's ISR has them too."""
        if log_end_offset > 0:
            self._last_appended[partition] = log_end_offset - 1

    def replicated_now(self, partition: int) -> bool:
        """Whether the ISR already has every state written to ``partition``."""
        offset = self._last_appended.get(partition)
        if offset is None:
            return True
        try:
            leader = self._replicas.leader_partition(TRANSACTION_STATE_TOPIC, partition)
        except BrokerResponseError:
            return False
        return leader.high_watermark > offset

    async def await_replicated(self, partition: int) -> int:
        """Waits until the ISR has every state written to ``partition``; 0, or the
        replication error (not leader, timed out, ISR below ``min.insync.replicas``)."""
        offset = self._last_appended.get(partition)
        if offset is None:
            return 0
        key = (TRANSACTION_STATE_TOPIC, partition)
        errors = await self._replicas.await_replication({key: offset}, STATE_WRITE_TIMEOUT_MS)
        return errors[key]


class TransactionCoordinatorService:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.config = TxnConfig.from_broker_config(broker.config)
        self.store = TxnLogStore(broker.replica_manager, broker.now_ms)
        self.markers = BrokerMarkerSender(broker, self.store)
        self.coordinator = TransactionCoordinator(
            self.config, self.store, self.markers, broker.controller.producer_ids.allocate,
            broker.now_ms)
        self.markers.coordinator = self.coordinator
        broker.replica_manager.add_leadership_listener(self)

    def start(self) -> None:
        tasks = self._broker.tasks
        tasks.every(self.config.abort_check_interval_ms, "abort-timed-out-transactions",
                    self._abort_timed_out)
        tasks.every(self.config.expiration_check_interval_ms, "expire-transactional-ids",
                    self._expire)

    async def _abort_timed_out(self) -> None:
        self.coordinator.abort_timed_out()

    async def _expire(self) -> None:
        self.coordinator.expire_idle()

    # ------------------------------------------------------------------ ownership

    def on_become_leader(self, topic: str, partition: int, leader_epoch: int) -> None:
        if topic != TRANSACTION_STATE_TOPIC:
            return
        self.coordinator.begin_loading(partition)
        loaded: dict[str, TxnLogValue] = {}
        try:
            replicas = self._broker.replica_manager
            state_log = replicas.leader_partition(TRANSACTION_STATE_TOPIC, partition).log
            self.store.loaded(partition, state_log.log_end_offset)
            for records in read_log_chunks(state_log):
                for record in records:
                    if record.key is None or record.batch.is_control:
                        continue
                    try:
                        transactional_id = decode_key(record.key)
                        if record.value is None:
                            loaded.pop(transactional_id, None)
                        else:
                            loaded[transactional_id] = decode_value(record.value)
                    except TransactionLogFormatError as exc:
                        log.warning("skipping %s-%d record at %d: %s", topic, partition,
                                    record.offset, exc)
        except Exception:
            log.exception("loading %s-%d failed", topic, partition)
            self.coordinator.unload_partition(partition)
            return
        self.coordinator.complete_loading(partition, leader_epoch, loaded)

    def on_resign(self, topic: str, partition: int) -> None:
        if topic == TRANSACTION_STATE_TOPIC:
            self.coordinator.unload_partition(partition)

    # ------------------------------------------------------------------ lookup

    async def durable(self, transactional_id: str, error: int = 0) -> int:
        """The answer to a request the coordinator decided with ``error``: a success waits
        until the id's state is in the ISR of its partition, so a coordinator that fails
        right after answering leaves its successor the state it promised. Errors as Kafka
        maps them: NOT_COORDINATOR once another broker leads the partition,
        COORDINATOR_NOT_AVAILABLE when the ISR did not take the write in time."""
        if error:
            return error
        error = await self.store.await_replicated(
            self.coordinator.partition_for(transactional_id))
        if error == NotLeaderOrFollowerError.errno:
            return NotCoordinatorError.errno
        return CoordinatorNotAvailableError.errno if error else 0

    async def ensure_topic(self) -> None:
        """Ask the controller for ``__transaction_state`` unless it exists already: Kafka's
        settings, its replication factor capped at the live brokers (as the offsets
        topic's) and ``min.insync.replicas`` at most that."""
        if self._broker.metadata_cache.partitions_of(TRANSACTION_STATE_TOPIC) is not None:
            return
        replicas = self._replication_factor()
        with contextlib.suppress(TopicAlreadyExistsError):
            await self._broker.controller.create_topic(
                TRANSACTION_STATE_TOPIC, self.config.num_partitions, replicas,
                configs={"cleanup.policy": "compact",
                         "segment.bytes": str(self.config.segment_bytes),
                         "min.insync.replicas": str(min(self.config.min_isr, replicas))})

    def _replication_factor(self) -> int:
        """``transaction.state.log.replication.factor`` in a cluster; the standalone
        controller keeps one replica per partition."""
        if not isinstance(self._broker.membership, ClusterMembership):
            return 1
        return internal_replication_factor(
            TRANSACTION_STATE_TOPIC, "transaction.state.log.replication.factor",
            self.config.replication_factor, len(self._broker.metadata_cache.brokers))

    async def coordinator_for(self, transactional_id: str) -> BrokerEndpoint | None:
        await self.ensure_topic()
        partition = self.coordinator.partition_for(transactional_id)
        return self._broker.metadata_cache.leader_endpoint(TRANSACTION_STATE_TOPIC, partition)


def install(broker: Broker) -> TransactionCoordinatorService:
    return TransactionCoordinatorService(broker)
