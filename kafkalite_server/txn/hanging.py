"""The backstop for a hanging transaction: one open on a partition led here that no
transaction coordinator will ever end.

Verification (:mod:`kafkalite_server.txn.verification`) keeps such transactions from
starting, but one may predate it, or start while verification is off
(``transaction.partition.verification.enable=false``). Its first offset holds the
partition's last stable offset, and with it every read_committed consumer, for good.
A transaction a coordinator runs cannot stay open longer than
``transaction.max.timeout.ms``: the coordinator aborts it at its timeout. So a transaction
open here longer than that, whose producer id no coordinator lists as Ongoing or
preparing its markers, is ended here with an abort marker, as the admin tool's
``abort_transaction`` would. When a coordinator does not answer, or one is still loading,
nothing is decided that pass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite_server.cluster.peer_requests import PeerRequests
from kafkalite_server.txn.config import TRANSACTION_STATE_TOPIC
from kafkalite_server.txn.markers import write_markers_locally
from kafkalite_server.txn.metadata import TopicPartition
from kafkalite_server.txn.peers import ask_peer
from kafkalite_server.txn.state import TxnState

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

STILL_ENDING = frozenset({TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                          TxnState.PREPARE_EPOCH_FENCE})
"""States in which a coordinator still writes the transaction's markers."""

OpenTransaction = tuple[TopicPartition, int, int]
"""(partition, producer id, first offset of its open transaction)."""


class HangingTransactions:
    def __init__(self, broker: Broker, max_timeout_ms: int,
                 now_ms: Callable[[], int]) -> None:
        self._broker = broker
        self.peers = PeerRequests(broker.peer_security, f"txn-hanging-{broker.node_id}")
        self._max_timeout_ms = max_timeout_ms
        self._now_ms = now_ms
        self._first_seen: dict[OpenTransaction, int] = {}

    async def abort_overdue(self) -> list[tuple[TopicPartition, int]]:
        """One pass: abort what hangs; returns the (partition, producer id) aborted."""
        now = self._now_ms()
        self._first_seen = {key: self._first_seen.get(key, now) for key in self._open_here()}
        overdue = [key for key, seen in self._first_seen.items()
                   if now - seen > self._max_timeout_ms]
        if not overdue:
            return []
        known = await self._producers_still_coordinated({pid for _, pid, _ in overdue})
        if known is None:
            return []
        aborted = []
        for tp, producer_id, first_offset in overdue:
            if producer_id in known or not self._abort(tp, producer_id, first_offset):
                continue
            aborted.append((tp, producer_id))
        return aborted

    def _open_here(self) -> list[OpenTransaction]:
        found: list[OpenTransaction] = []
        for key, partition in list(self._broker.replica_manager.partitions.items()):
            if partition.is_leader and not partition.log.offline:
                found.extend((key, pid, first) for pid, first
                             in partition.log.producer_state.ongoing.items())
        return found

    def _abort(self, tp: TopicPartition, producer_id: int, first_offset: int) -> bool:
        try:
            state = self._broker.replica_manager.leader_partition(*tp).log.producer_state
        except KafkaError:
            return False
        entry = state.producers.get(producer_id)
        if entry is None or state.ongoing.get(producer_id) != first_offset:
            return False
        log.warning("aborting the transaction of producer %d open on %s-%d since offset %d: "
                    "no transaction coordinator runs it, and it is older than "
                    "transaction.max.timeout.ms (%d ms)", producer_id, *tp, first_offset,
                    self._max_timeout_ms)
        results = write_markers_locally(self._broker, producer_id, entry.epoch,
                                        entry.coordinator_epoch, False, [tp])
        return results[tp][0] == 0

    async def _producers_still_coordinated(self, producer_ids: set[int]) -> set[int] | None:
        """The producer ids some coordinator still ends a transaction of; None unless every
        coordinator (each ``__transaction_state`` leader) answered, loaded."""
        cache = self._broker.metadata_cache
        states = cache.partitions_of(TRANSACTION_STATE_TOPIC) or []
        leaders = {state.leader for state in states}
        if any(cache.brokers.get(leader) is None for leader in leaders):
            return None
        known: set[int] = set()
        for leader in leaders:
            listed = await self._list(leader, producer_ids)
            if listed is None:
                return None
            known |= listed
        return known

    async def _list(self, broker_id: int, producer_ids: set[int]) -> set[int] | None:
        if broker_id == self._broker.node_id:
            error, listed = self._broker.txn_coordinator.coordinator.list_transactions(
                set(STILL_ENDING), producer_ids)
            return None if error else {meta.producer_id for meta in listed}
        endpoint = self._broker.metadata_cache.brokers[broker_id]
        body = {"state_filters": [state.display for state in STILL_ENDING],
                "producer_id_filters": sorted(producer_ids)}
        response = await ask_peer(self.peers, endpoint, ApiKey.LIST_TRANSACTIONS, 0, body)
        if response is None or response["error_code"]:
            return None
        return {txn["producer_id"] for txn in response["transaction_states"]}
