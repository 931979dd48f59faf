"""The AdminClient's view of transactions (KIP-664), in kafka-python's shapes.

kafka-python 3 exposes the hanging-transaction tooling as ``list_transactions``,
``describe_transactions``, ``describe_producers``, ``abort_transaction`` and
``find_hanging_transactions``; this module holds their result types and turns the broker's
answers (ListTransactions, DescribeTransactions, DescribeProducers, WriteTxnMarkers) into
them. No I/O here: :class:`kafkalite.admin.AdminClient` sends the requests; the hanging
check takes the clock as an argument so its rule is testable on its own.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafkalite.protocol.errors import error_for_code
from kafkalite.structs import TopicPartition

HANGING_SLACK_MS = 5 * 60 * 1000
"""What ``find_hanging_transactions`` adds to the transaction timeout before it calls a
transaction hanging: the margin of Kafka's ``kafka-transactions.sh find-hanging`` and of
kafka-python."""


class TransactionState(enum.StrEnum):
    """A transaction's state as the coordinator names it on the wire."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    UNKNOWN = "Unknown"

    @classmethod
    def _missing_(cls, value: object) -> TransactionState:
        return cls.UNKNOWN  # a state a newer broker reports


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


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partition numbers grouped by topic, sorted."""
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in sorted(set(partitions)):
        grouped[tp.topic].append(tp.partition)
    return dict(grouped)


def list_transactions_request(producer_id_filters: Iterable[int] | None,
                              state_filters: Iterable[TransactionState | str] | None,
                              duration_filter_ms: int | None) -> dict[str, Any]:
    return {"state_filters": [TransactionState(s).value if isinstance(s, TransactionState)
                              else str(s) for s in state_filters or ()],
            "producer_id_filters": list(producer_id_filters or ()),
            "duration_filter": -1 if duration_filter_ms is None else int(duration_filter_ms)}


def transaction_listings(node: int, body: Mapping[str, Any]) -> list[TransactionListing]:
    code = body["error_code"]
    if code:
        raise error_for_code(code)(f"listing the transactions of broker {node}")
    return [TransactionListing(t["transactional_id"], t["producer_id"],
                               TransactionState(t["transaction_state"]))
            for t in body["transaction_states"]]


def transaction_descriptions(node: int, body: Mapping[str, Any]
                             ) -> dict[str, TransactionDescription]:
    out = {}
    for t in body["transaction_states"]:
        if t["error_code"]:
            raise error_for_code(t["error_code"])(
                f"describing transactional id {t['transactional_id']!r}")
        out[t["transactional_id"]] = TransactionDescription(
            node, TransactionState(t["transaction_state"]), t["producer_id"],
            t["producer_epoch"], t["transaction_timeout_ms"], t["transaction_start_time_ms"],
            {TopicPartition(topic["topic"], p) for topic in t["topics"]
             for p in topic["partitions"]})
    return out


def producer_states(body: Mapping[str, Any]) -> dict[TopicPartition, PartitionProducerState]:
    out = {}
    for topic in body["topics"]:
        for part in topic["partitions"]:
            tp = TopicPartition(topic["name"], part["partition_index"])
            if part["error_code"]:
                raise error_for_code(part["error_code"])(
                    f"describing the producers of {tp.topic}-{tp.partition}"
                    + (f": {part['error_message']}" if part["error_message"] else ""))
            out[tp] = PartitionProducerState([
                ProducerState(p["producer_id"], p["producer_epoch"], p["last_sequence"],
                              p["last_timestamp"], p["coordinator_epoch"],
                              p["current_txn_start_offset"])
                for p in part["active_producers"]])
    return out


def abort_request(spec: AbortTransactionSpec) -> dict[str, Any]:
    """WriteTxnMarkers with one ABORT marker (transaction_result false) for one partition."""
    tp = spec.topic_partition
    return {"markers": [{"producer_id": spec.producer_id,
                         "producer_epoch": spec.producer_epoch,
                         "transaction_result": False,
                         "topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}],
                         "coordinator_epoch": spec.coordinator_epoch}]}


def check_abort(spec: AbortTransactionSpec, body: Mapping[str, Any]) -> None:
    tp = spec.topic_partition
    for marker in body["markers"]:
        for topic in marker["topics"]:
            for part in topic["partitions"]:
                if part["error_code"]:
                    raise error_for_code(part["error_code"])(
                        f"aborting producer {spec.producer_id}'s transaction on "
                        f"{tp.topic}-{tp.partition}")


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
