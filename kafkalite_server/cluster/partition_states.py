"""A leader's ISR writes to the partition state node, as Kafka 2.x leaders make them, and
a broker's log directory failures, as its notification node.

Kafka leaders before AlterPartition (inter.broker.protocol.version < 2.7) write
``/brokers/topics/<t>/partitions/<p>/state`` themselves, conditionally on the zkVersion
they last saw, then leave an ``/isr_change_notification/isr_change_<seq>`` node so the
controller re-reads the state and sends UpdateMetadata. kafkalite does the same: the state
node already carries the version check the controller uses, and brokers already hold a
coordination session. The calls run on the broker's coordination worker, never on its
event loop; replication sees only its own types (:mod:`~kafkalite_server.replication.
isr_store`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.coordination import BadVersionError, Coordination
from kafkalite_server.cluster.store_worker import StoreWorker
from kafkalite_server.replication.isr_store import IsrState, StaleIsrVersionError
from kafkalite_server.topic_partition import TopicPartition

log = logging.getLogger(__name__)



class PartitionStateStore:
    def __init__(self, store: Callable[[], Coordination], worker: StoreWorker) -> None:
        """``store()`` is the broker's current session (it changes after an expiry)."""
        self._store = store
        self._worker = worker

    async def read(self, key: TopicPartition) -> tuple[IsrState, int]:
        return await self._worker.call(self._read, key)

    async def write(self, key: TopicPartition, state: IsrState, version: int) -> int:
        return await self._worker.call(self._write, key, state, version)

    def _read(self, key: TopicPartition) -> tuple[IsrState, int]:
        path = layout.partition_state_path(*key)
        data, stat = self._store().get(path)
        stored = layout.LeaderIsr.decode(path, data)
        return (IsrState(stored.leader, stored.leader_epoch, stored.isr,
                         stored.controller_epoch), stat.version)

    def _write(self, key: TopicPartition, state: IsrState, version: int) -> int:
        store = self._store()
        document = layout.LeaderIsr(state.leader, state.leader_epoch, state.isr,
                                state.controller_epoch)
        try:
            stat = store.set(layout.partition_state_path(*key), document.encode(), version)
        except BadVersionError as exc:
            raise StaleIsrVersionError(str(exc)) from None
        store.create(layout.ISR_CHANGE_PREFIX, layout.encode_isr_change([key]), sequential=True,
                     makepath=True)
        return stat.version


class LogDirEventNotifier:
    """A failed log directory, announced as Kafka's brokers do: a sequential
    ``/log_dir_event_notification/log_dir_event_<seq>`` naming this broker, which the
    controller watches."""

    def __init__(self, broker_id: int, store: Callable[[], Coordination],
                 worker: StoreWorker) -> None:
        self._broker_id = broker_id
        self._store = store
        self._worker = worker

    async def log_dir_failed(self) -> None:
        await self._worker.call(self._announce)

    def _announce(self) -> None:
        self._store().create(layout.LOG_DIR_EVENT_PREFIX, layout.encode_log_dir_event(self._broker_id),
                             sequential=True, makepath=True)
        log.info("broker %d: told the controller that a log directory failed", self._broker_id)
