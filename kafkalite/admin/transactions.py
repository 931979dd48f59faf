"""Transactions (KIP-664) in kafka-python 3's shapes: ListTransactions (each broker),
DescribeTransactions (each id's transaction coordinator), DescribeProducers and an ABORT
marker through WriteTxnMarkers (each partition's leader).

These are the hanging-transaction tools of Kafka's ``kafka-transactions.sh``; the hanging
check (:func:`hanging`) takes the clock as an argument so its rule is testable on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import Coordinator, EachBroker, GivenBroker, PartitionLeader
from kafkalite.admin.offsets import by_topic
from kafkalite.client.coordinator import TRANSACTION_KEY
from kafkalite.protocol import ApiKey
from kafkalite.protocol.states import TransactionState
from kafkalite.structs import TopicPartition

HANGING_SLACK_MS = 5 * 60 * 1000
"""What ``find_hanging_transactions`` adds to the transaction timeout before it calls a
transaction hanging: the margin of Kafka's ``kafka-transactions.sh find-hanging`` and of
kafka-python."""


CLOSED_STATES = frozenset({TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                           TransactionState.COMPLETE_ABORT, TransactionState.DEAD})
"""States in which a transactional id has no transaction open (so none can hang)."""


class TransactionListing(NamedTuple):
    """One transaction of a ListTransactions answer."""

    transactional_id: str
    producer_id: int
    state: TransactionState


class TransactionDescription(NamedTuple):
    """One transactional id as its coordinator (``coordinator_id``) describes it."""

    coordinator_id: int
    state: TransactionState
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    topic_partitions: set[TopicPartition]


class ProducerState(NamedTuple):
    """One active producer of a partition (DescribeProducers);
    ``current_transaction_start_offset`` is -1 unless it has a transaction open there."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_transaction_start_offset: int


class PartitionProducerState(NamedTuple):
    active_producers: list[ProducerState]


class AbortTransactionSpec(NamedTuple):
    """What ``abort_transaction`` ends: the producer's open transaction on one partition.
    ``coordinator_epoch`` -1 passes the leader's epoch check only for a producer no
    coordinator has written a marker for; pass the one ``describe_producers`` reports
    otherwise, as Kafka's tool does."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int = -1


class ListTransactions(AdminApiHandler[int, list[TransactionListing]]):
    """The transactions each broker coordinates (the keys are broker ids).
    ``duration_filter_ms`` needs ListTransactions v1, ``transactional_id_pattern`` v2."""

    api_key = ApiKey.LIST_TRANSACTIONS

    def __init__(self, producer_id_filters: Iterable[int] | None,
                 state_filters: Iterable[TransactionState | str] | None,
                 duration_filter_ms: int | None,
                 transactional_id_pattern: str | None = None) -> None:
        super().__init__(EachBroker())
        self.body = {
            "state_filters": [TransactionState(s).value if isinstance(s, TransactionState)
                              else str(s) for s in state_filters or ()],
            "producer_id_filters": list(producer_id_filters or ()),
            "duration_filter": -1 if duration_filter_ms is None else int(duration_filter_ms)}
        if transactional_id_pattern is not None:  # a v2 field: refused before sending
            self.min_version, self.needs = 2, "transactional_id_pattern"
        elif duration_filter_ms is not None:
            self.min_version, self.needs = 1, "duration_filter_ms"
        else:
            self.min_version, self.needs = 0, ""

    def build_request(self, node: int, keys: Sequence[int]) -> Request:
        return Request(self.api_key, self.body, min_version=self.min_version,
                       needs=f"list_transactions({self.needs}=...)")

    def handle_response(self, node: int, keys: Sequence[int], body: Mapping[str, Any],
                        ) -> ApiResult[int, list[TransactionListing]]:
        outcome: ApiResult[int, list[TransactionListing]] = ApiResult()
        if not outcome.error(node, body["error_code"],
                             f"listing the transactions of broker {node}"):
            outcome.complete(node, [TransactionListing(t["transactional_id"], t["producer_id"],
                                                       TransactionState(t["transaction_state"]))
                                    for t in body["transaction_states"]])
        return outcome


class DescribeTransactions(AdminApiHandler[str, TransactionDescription]):
    """Each transactional id as its coordinator describes it; an id the coordinator does
    not know raises TransactionalIdNotFoundError naming it."""

    api_key = ApiKey.DESCRIBE_TRANSACTIONS

    def __init__(self) -> None:
        super().__init__(Coordinator(TRANSACTION_KEY))

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {"transactional_ids": list(keys)})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, TransactionDescription]:
        outcome: ApiResult[str, TransactionDescription] = ApiResult()
        for t in body["transaction_states"]:
            txn_id = t["transactional_id"]
            if outcome.error(txn_id, t["error_code"],
                             f"describing transactional id {txn_id!r}"):
                continue
            outcome.complete(txn_id, TransactionDescription(
                node, TransactionState(t["transaction_state"]), t["producer_id"],
                t["producer_epoch"], t["transaction_timeout_ms"],
                t["transaction_start_time_ms"],
                {TopicPartition(topic["topic"], p) for topic in t["topics"]
                 for p in topic["partitions"]}))
        return outcome


class DescribeProducers(AdminApiHandler[TopicPartition, PartitionProducerState]):
    """The active producers of each partition (its leader, or the broker named)."""

    api_key = ApiKey.DESCRIBE_PRODUCERS

    def __init__(self, broker_id: int | None = None) -> None:
        super().__init__(PartitionLeader() if broker_id is None else GivenBroker(broker_id))

    def build_request(self, node: int, keys: Sequence[TopicPartition]) -> Request:
        return Request(self.api_key, {"topics": [{"name": t, "partition_indexes": p}
                                                 for t, p in by_topic(keys).items()]})

    def handle_response(self, node: int, keys: Sequence[TopicPartition], body: Mapping[str, Any],
                        ) -> ApiResult[TopicPartition, PartitionProducerState]:
        outcome: ApiResult[TopicPartition, PartitionProducerState] = ApiResult()
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["name"], part["partition_index"])
                if outcome.error(tp, part["error_code"],
                                 f"describing the producers of {tp.topic}-{tp.partition}",
                                 part["error_message"]):
                    continue
                outcome.complete(tp, PartitionProducerState([
                    ProducerState(p["producer_id"], p["producer_epoch"], p["last_sequence"],
                                  p["last_timestamp"], p["coordinator_epoch"],
                                  p["current_txn_start_offset"])
                    for p in part["active_producers"]]))
        return outcome


class AbortTransaction(AdminApiHandler[TopicPartition, None]):
    """WriteTxnMarkers with one ABORT marker (transaction_result false) for one partition,
    written by its leader, which checks the producer id and epochs."""

    api_key = ApiKey.WRITE_TXN_MARKERS

    def __init__(self, spec: AbortTransactionSpec) -> None:
        super().__init__(PartitionLeader())
        self.spec = spec

    def build_request(self, node: int, keys: Sequence[TopicPartition]) -> Request:
        tp = self.spec.topic_partition
        return Request(self.api_key, {"markers": [{
            "producer_id": self.spec.producer_id, "producer_epoch": self.spec.producer_epoch,
            "transaction_result": False,
            "topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}],
            "coordinator_epoch": self.spec.coordinator_epoch}]})

    def handle_response(self, node: int, keys: Sequence[TopicPartition], body: Mapping[str, Any],
                        ) -> ApiResult[TopicPartition, None]:
        tp = self.spec.topic_partition
        outcome: ApiResult[TopicPartition, None] = ApiResult()
        codes = [part["error_code"] for marker in body["markers"]
                 for topic in marker["topics"] for part in topic["partitions"]]
        code = next((c for c in codes if c), 0)
        if not outcome.error(tp, code, f"aborting producer {self.spec.producer_id}'s "
                                       f"transaction on {tp.topic}-{tp.partition}"):
            outcome.complete(tp, None)
        return outcome


def hanging(descriptions: Mapping[str, TransactionDescription], now_ms: int,
            max_transaction_timeout_ms: int) -> list[dict[str, Any]]:
    """The open transactions older than ``max_transaction_timeout_ms`` plus
    :data:`HANGING_SLACK_MS` at ``now_ms``, as kafka-python reports them: one dict per
    transaction with ``transactional_id``, ``producer_id``, ``producer_epoch``, ``state``
    (the wire name), ``age_ms``, ``coordinator_id`` and sorted ``topic_partitions``."""
    threshold = max_transaction_timeout_ms + HANGING_SLACK_MS
    found = []
    for txn_id, desc in sorted(descriptions.items()):
        if desc.state in CLOSED_STATES or desc.transaction_start_time_ms < 0:
            continue
        age_ms = now_ms - desc.transaction_start_time_ms
        if age_ms < threshold:
            continue
        found.append({"transactional_id": txn_id, "producer_id": desc.producer_id,
                      "producer_epoch": desc.producer_epoch, "state": desc.state.value,
                      "age_ms": age_ms, "coordinator_id": desc.coordinator_id,
                      "topic_partitions": sorted(desc.topic_partitions)})
    return found
