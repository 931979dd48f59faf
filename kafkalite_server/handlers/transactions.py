"""Transaction APIs: AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
WriteTxnMarkers (27), DescribeProducers (61), DescribeTransactions (65),
ListTransactions (66). InitProducerId with a transactional id is in
:mod:`kafkalite_server.handlers.producer_id`, TxnOffsetCommit and FindCoordinator key
type 1 in :mod:`kafkalite_server.handlers.groups`.

Handlers translate; the decisions are the transaction coordinator's
(:mod:`kafkalite_server.txn.coordinator`) or the log's, and a success is answered once
the state it rests on is in the ISR (the service's ``durable``; WriteTxnMarkers waits for
its markers the same way). Requests older than KIP-588's
versions get INVALID_PRODUCER_EPOCH where newer ones get PRODUCER_FENCED.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidProducerEpochError,
    OperationNotAttemptedError,
    ProducerFencedError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.acls import AclOperation, ResourceType
from kafkalite_server.security.api_checks import requires, txn_markers_error, txn_partition_error
from kafkalite_server.txn.coordinator import TransactionCoordinator
from kafkalite_server.txn.markers import write_markers
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


@requires(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "v3_and_below_transactional_id",
          txn_partition_error)
async def handle_add_partitions_to_txn(ctx: RequestContext, body: Body) -> Body:
    metadata = ctx.broker.metadata_cache
    requested = [(t["name"], p) for t in body["v3_and_below_topics"] for p in t["partitions"]]
    unknown = {tp for tp in requested if metadata.partition(*tp) is None}
    if unknown:
        errors = {tp: UnknownTopicOrPartitionError.errno if tp in unknown
                  else OperationNotAttemptedError.errno for tp in requested}
    else:
        transactional_id = body["v3_and_below_transactional_id"]
        decided = _coordinator(ctx).add_partitions(
            transactional_id, body["v3_and_below_producer_id"],
            body["v3_and_below_producer_epoch"], requested,
            fenced_error=fenced_error("add_partitions", ctx.api_version))
        error = await ctx.broker.txn_coordinator.durable(transactional_id, decided)
        errors = dict.fromkeys(requested, error)
    by_topic: dict[str, list[Body]] = defaultdict(list)
    for (topic, index), error in errors.items():
        by_topic[topic].append({"partition_index": index, "partition_error_code": error})
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": t, "results_by_partition": r} for t, r in by_topic.items()]}


@requires(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "transactional_id")
async def handle_add_offsets_to_txn(ctx: RequestContext, body: Body) -> Body:
    groups = ctx.broker.group_coordinator
    await groups.ensure_offsets_topic()
    known = ctx.broker.metadata_cache.partitions_of("__consumer_offsets")
    count = len(known) if known else groups.config.offsets_topic_num_partitions
    decided = _coordinator(ctx).add_offsets(
        body["transactional_id"], body["producer_id"], body["producer_epoch"],
        body["group_id"], count, fenced_error=fenced_error("add_offsets", ctx.api_version))
    error = await ctx.broker.txn_coordinator.durable(body["transactional_id"], decided)
    return {"throttle_time_ms": 0, "error_code": error}


@requires(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "transactional_id")
async def handle_end_txn(ctx: RequestContext, body: Body) -> Body:
    decided = _coordinator(ctx).end_transaction(
        body["transactional_id"], body["producer_id"], body["producer_epoch"],
        body["committed"], fenced_error=fenced_error("end_txn", ctx.api_version))
    error = await ctx.broker.txn_coordinator.durable(body["transactional_id"], decided)
    return {"throttle_time_ms": 0, "error_code": error}


@requires(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, deny=txn_markers_error)
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


async def handle_describe_producers(ctx: RequestContext, body: Body) -> Body:
    topics = []
    for topic in body["topics"]:
        partitions = []
        for index in topic["partition_indexes"]:
            try:
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


async def handle_describe_transactions(ctx: RequestContext, body: Body) -> Body:
    states = []
    for transactional_id in body["transactional_ids"]:
        error, meta = _coordinator(ctx).describe(transactional_id)
        if meta is None:
            states.append({"error_code": error, "transactional_id": transactional_id,
                           "transaction_state": "", "transaction_timeout_ms": 0,
                           "transaction_start_time_ms": -1, "producer_id": -1,
                           "producer_epoch": -1, "topics": []})
            continue
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in sorted(meta.partitions):
            by_topic[topic].append(index)
        states.append({"error_code": 0, "transactional_id": transactional_id,
                       "transaction_state": meta.state.display,
                       "transaction_timeout_ms": meta.timeout_ms,
                       "transaction_start_time_ms": meta.start_ms,
                       "producer_id": meta.producer_id, "producer_epoch": meta.producer_epoch,
                       "topics": [{"topic": t, "partitions": p} for t, p in by_topic.items()]})
    return {"throttle_time_ms": 0, "transaction_states": states}


async def handle_list_transactions(ctx: RequestContext, body: Body) -> Body:
    wanted = {name: TxnState.from_display(name) for name in body["state_filters"]}
    listed = _coordinator(ctx).list_transactions(
        {state for state in wanted.values() if state is not None},
        set(body["producer_id_filters"]), body.get("duration_filter", -1))
    unknown = [name for name, state in wanted.items() if state is None]
    if unknown and not any(wanted.values()):
        listed = []  # only unknown states asked for: nothing matches
    return {"throttle_time_ms": 0, "error_code": 0, "unknown_state_filters": unknown,
            "transaction_states": [{"transactional_id": meta.transactional_id,
                                    "producer_id": meta.producer_id,
                                    "transaction_state": meta.state.display}
                                   for meta in listed]}
