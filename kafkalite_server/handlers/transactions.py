"""Transaction APIs: AddPartitionsToTxn (24; its v4 comes from brokers and may only
verify, KIP-890), AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers (27),
DescribeProducers (61), DescribeTransactions (65), ListTransactions (66). InitProducerId
with a transactional id is in
:mod:`kafkalite_server.handlers.producer_id`, TxnOffsetCommit and FindCoordinator key
type 1 in :mod:`kafkalite_server.handlers.groups`.

Handlers translate; the decisions are the transaction coordinator's
(:mod:`kafkalite_server.txn.coordinator`) or the log's, and a success is answered once
the state it rests on is in the ISR (the service's ``durable``; WriteTxnMarkers waits for
its markers the same way). Requests older than KIP-588's
versions get INVALID_PRODUCER_EPOCH where newer ones get PRODUCER_FENCED.

Authorization follows Kafka: the transactional id's Write for a producer's requests (and
Write on each topic it adds; a broker's AddPartitionsToTxn v4+ needs ClusterAction instead, Read on the group whose offsets it adds), ClusterAction for
the coordinator's WriteTxnMarkers, Read on the topic for DescribeProducers, and Describe on
the transactional id to see a transaction (ListTransactions leaves out the others,
DescribeTransactions lists only the partitions of topics the principal may describe).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidProducerEpochError,
    OperationNotAttemptedError,
    ProducerFencedError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import (
    CLUSTER_ACTION,
    DESCRIBE_TOPICS,
    DESCRIBE_TRANSACTIONAL_IDS,
    READ_GROUP,
    READ_TOPICS,
    WRITE_TOPICS,
    WRITE_TRANSACTIONAL_ID,
    declares,
    requires,
    txn_markers_error,
    txn_partition_error,
)
from kafkalite_server.txn.coordinator import TransactionCoordinator
from kafkalite_server.txn.markers import write_markers
from kafkalite_server.txn.metadata import TopicPartition
from kafkalite_server.txn.state import TxnState

Body = dict[str, Any]

FENCED_SINCE = {"add_partitions": 2, "add_offsets": 2, "end_txn": 2, "init": 4,
                "txn_offset_commit": 3}
"""First version of each request that may be answered PRODUCER_FENCED (KIP-588)."""


def fenced_error(request: str, version: int) -> int:
    if version >= FENCED_SINCE[request]:
        return ProducerFencedError.errno
    return InvalidProducerEpochError.errno


def _coordinator(ctx: RequestContext) -> TransactionCoordinator:
    return ctx.broker.txn_coordinator.coordinator


VERIFYING_VERSION = 4
"""AddPartitionsToTxn v4+: a broker's request, several transactions each either added or
(``verify_only``, KIP-890) checked."""
CLIENT_ADD_PARTITIONS = replace(WRITE_TRANSACTIONAL_ID, when="v0-3, from a producer")
BROKER_ADD_PARTITIONS = replace(CLUSTER_ACTION, when="v4+, from a partition leader")


@declares(CLIENT_ADD_PARTITIONS, WRITE_TOPICS, BROKER_ADD_PARTITIONS)
async def handle_add_partitions_to_txn(ctx: RequestContext, body: Body) -> Body:
    if ctx.api_version >= VERIFYING_VERSION:
        if not BROKER_ADD_PARTITIONS.allows(ctx):
            return {"throttle_time_ms": 0,
                    "error_code": BROKER_ADD_PARTITIONS.error.errno,
                    "results_by_transaction": []}
        return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": [
            {"transactional_id": txn["transactional_id"],
             "topic_results": _by_topic(await _add_or_verify(ctx, txn))}
            for txn in body["transactions"]]}
    if not CLIENT_ADD_PARTITIONS.allows(ctx, body["v3_and_below_transactional_id"]):
        return txn_partition_error(body, CLIENT_ADD_PARTITIONS.error.errno)
    errors = await _add_partitions(
        ctx, body["v3_and_below_transactional_id"], body["v3_and_below_producer_id"],
        body["v3_and_below_producer_epoch"],
        [(t["name"], p) for t in body["v3_and_below_topics"] for p in t["partitions"]])
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _by_topic(errors)}


async def _add_or_verify(ctx: RequestContext, txn: Body) -> dict[TopicPartition, int]:
    requested = [(t["name"], p) for t in txn["topics"] for p in t["partitions"]]
    if txn["verify_only"]:
        return _coordinator(ctx).verify_partitions(
            txn["transactional_id"], txn["producer_id"], txn["producer_epoch"], requested)
    return await _add_partitions(ctx, txn["transactional_id"], txn["producer_id"],
                                 txn["producer_epoch"], requested, from_broker=True)


async def _add_partitions(ctx: RequestContext, transactional_id: str, producer_id: int,
                          producer_epoch: int, requested: list[TopicPartition], *,
                          from_broker: bool = False) -> dict[TopicPartition, int]:
    """A producer needs Write on each topic; a broker adding for one (v4+) was checked for
    ClusterAction already."""
    metadata = ctx.broker.metadata_cache
    denied = (frozenset() if from_broker
              else WRITE_TOPICS.denied(ctx, [topic for topic, _ in requested]))
    refused = {tp: WRITE_TOPICS.error.errno for tp in requested if tp[0] in denied}
    refused.update({tp: UnknownTopicOrPartitionError.errno for tp in requested
                    if tp not in refused and metadata.partition(*tp) is None})
    if refused:
        return {tp: refused.get(tp, OperationNotAttemptedError.errno) for tp in requested}
    decided = _coordinator(ctx).add_partitions(
        transactional_id, producer_id, producer_epoch, requested,
        fenced_error=fenced_error("add_partitions", ctx.api_version))
    error = await ctx.broker.txn_coordinator.durable(transactional_id, decided)
    return dict.fromkeys(requested, error)


def _by_topic(errors: dict[TopicPartition, int]) -> list[Body]:
    by_topic: dict[str, list[Body]] = defaultdict(list)
    for (topic, index), error in errors.items():
        by_topic[topic].append({"partition_index": index, "partition_error_code": error})
    return [{"name": t, "results_by_partition": r} for t, r in by_topic.items()]


@requires(WRITE_TRANSACTIONAL_ID, "transactional_id")
@requires(READ_GROUP, "group_id")
async def handle_add_offsets_to_txn(ctx: RequestContext, body: Body) -> Body:
    groups = ctx.broker.group_coordinator.runtime
    await groups.ensure_topic()
    decided = _coordinator(ctx).add_offsets(
        body["transactional_id"], body["producer_id"], body["producer_epoch"],
        groups.placed(body["group_id"]),
        fenced_error=fenced_error("add_offsets", ctx.api_version))
    error = await ctx.broker.txn_coordinator.durable(body["transactional_id"], decided)
    return {"throttle_time_ms": 0, "error_code": error}


@requires(WRITE_TRANSACTIONAL_ID, "transactional_id")
async def handle_end_txn(ctx: RequestContext, body: Body) -> Body:
    decided = _coordinator(ctx).end_transaction(
        body["transactional_id"], body["producer_id"], body["producer_epoch"],
        body["committed"], fenced_error=fenced_error("end_txn", ctx.api_version))
    error = await ctx.broker.txn_coordinator.durable(body["transactional_id"], decided)
    return {"throttle_time_ms": 0, "error_code": error}


@requires(CLUSTER_ACTION, deny=txn_markers_error)
async def handle_write_txn_markers(ctx: RequestContext, body: Body) -> Body:
    markers = []
    for marker in body["markers"]:
        partitions = [(t["name"], p) for t in marker["topics"] for p in t["partition_indexes"]]
        results = await write_markers(ctx.broker, marker["producer_id"],
                                      marker["producer_epoch"], marker["coordinator_epoch"],
                                      marker["transaction_result"], partitions)
        by_topic: dict[str, list[Body]] = defaultdict(list)
        for (topic, index), error in results.items():
            by_topic[topic].append({"partition_index": index, "error_code": error})
        markers.append({"producer_id": marker["producer_id"],
                        "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]})
    return {"markers": markers}


@declares(READ_TOPICS)
async def handle_describe_producers(ctx: RequestContext, body: Body) -> Body:
    denied = READ_TOPICS.denied(ctx, [topic["name"] for topic in body["topics"]])
    topics = []
    for topic in body["topics"]:
        partitions = []
        for index in topic["partition_indexes"]:
            try:
                if topic["name"] in denied:
                    raise READ_TOPICS.error(f"no Read permission for {topic['name']!r}")
                log = ctx.broker.replica_manager.leader_partition(topic["name"], index).log
            except BrokerResponseError as exc:
                partitions.append({"partition_index": index, "error_code": exc.errno,
                                   "error_message": exc.context or None,
                                   "active_producers": []})
                continue
            partitions.append({"partition_index": index, "error_code": 0,
                               "error_message": None, "active_producers": [
                                   {"producer_id": pid, "producer_epoch": entry.epoch,
                                    "last_sequence": entry.last_sequence,
                                    "last_timestamp": entry.last_timestamp,
                                    "coordinator_epoch": entry.coordinator_epoch,
                                    "current_txn_start_offset": entry.current_txn_first_offset}
                                   for pid, entry in log.producer_state.producers.items()]})
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


LISTED_PARTITIONS = replace(DESCRIBE_TOPICS, when="a transaction's partitions",
                            filters=True)


@declares(DESCRIBE_TRANSACTIONAL_IDS, LISTED_PARTITIONS)
async def handle_describe_transactions(ctx: RequestContext, body: Body) -> Body:
    states = []
    for transactional_id in body["transactional_ids"]:
        if not DESCRIBE_TRANSACTIONAL_IDS.allows(ctx, transactional_id):
            error, meta = DESCRIBE_TRANSACTIONAL_IDS.error.errno, None
        else:
            error, meta = _coordinator(ctx).describe(transactional_id)
        if meta is None:
            states.append({"error_code": error, "transactional_id": transactional_id,
                           "transaction_state": "", "transaction_timeout_ms": 0,
                           "transaction_start_time_ms": -1, "producer_id": -1,
                           "producer_epoch": -1, "topics": []})
            continue
        by_topic: dict[str, list[int]] = defaultdict(list)
        hidden = LISTED_PARTITIONS.denied(ctx, {topic for topic, _ in meta.partitions})
        for topic, index in sorted(meta.partitions):
            if topic not in hidden:
                by_topic[topic].append(index)
        states.append({"error_code": 0, "transactional_id": transactional_id,
                       "transaction_state": meta.state.display,
                       "transaction_timeout_ms": meta.timeout_ms,
                       "transaction_start_time_ms": meta.start_ms,
                       "producer_id": meta.producer_id, "producer_epoch": meta.producer_epoch,
                       "topics": [{"topic": t, "partitions": p} for t, p in by_topic.items()]})
    return {"throttle_time_ms": 0, "transaction_states": states}


LISTED_TRANSACTIONS = replace(DESCRIBE_TRANSACTIONAL_IDS, filters=True)


@declares(LISTED_TRANSACTIONS)
async def handle_list_transactions(ctx: RequestContext, body: Body) -> Body:
    wanted = {name: TxnState.from_display(name) for name in body["state_filters"]}
    error, listed = _coordinator(ctx).list_transactions(
        {state for state in wanted.values() if state is not None},
        set(body["producer_id_filters"]), body.get("duration_filter", -1))
    unknown = [name for name, state in wanted.items() if state is None]
    if unknown and not any(wanted.values()):
        listed = []  # only unknown states asked for: nothing matches
    return {"throttle_time_ms": 0, "error_code": error, "unknown_state_filters": unknown,
            "transaction_states": [{"transactional_id": meta.transactional_id,
                                    "producer_id": meta.producer_id,
                                    "transaction_state": meta.state.display}
                                   for meta in listed
                                   if LISTED_TRANSACTIONS.allows(ctx, meta.transactional_id)]}
