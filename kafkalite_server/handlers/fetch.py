"""Fetch (1), versions 0-17: translate the request for ``ReplicaManager.fetch_messages``.

Fetch v13 names topics by id (KIP-516): an id of no topic here (one never created, or a
topic deleted and created again under its name since the client read its metadata) is
answered UNKNOWN_TOPIC_ID for each of its partitions. Fetch v12+ carries each partition's
``last_fetched_epoch``: a partition whose fetcher diverged is answered its
``diverging_epoch`` instead of records (the replica manager's check, as Kafka's).

Every requested partition is in the response, in request order (kafka-python drops a
full-fetch response that leaves one out). The replica manager applies ``max_bytes``,
``partition_max_bytes`` (the first batch found is always sent whole), the high watermark
and the ``min_bytes``/``max_wait_ms`` wait; record bytes go out with sendfile, except for
Fetch v0-3, whose clients cannot read v2 batches (:mod:`~kafkalite_server.log.down_conversion`):
their records are converted an entry at a time within the response's ``max_bytes`` and
the broker's :class:`~kafkalite_server.log.down_conversion.DownConversionBudget`. A
consumer's ``max_bytes`` is capped by the broker's ``fetch.max.bytes`` (Kafka's rule; Fetch
v0-2 carry no ``max_bytes`` at all).

KIP-392: a consumer's Fetch v11+ may be served by a follower (up to its high watermark), and
with ``replica.selector.class`` RackAwareReplicaSelector the leader answers a partition with
a follower in the consumer's ``rack_id`` by naming it as ``preferred_read_replica``, without
records (:mod:`~kafkalite_server.replication.replica_selector`).

Fetch v15+ names the fetching replica in ``replica_state`` (KIP-903; its broker epoch is not
checked here, as a ZooKeeper-mode Kafka broker does not). v16+ (KIP-951) answers a partition
refused with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH with its current leader
(:mod:`~kafkalite_server.handlers.leader_hints`). v17's directory id is read and not used (it
is KRaft's, KIP-853). No incremental fetch sessions (KIP-227): ``session_id`` is always 0,
which a client takes as "full fetch every time", as Kafka allows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import TopicAuthorizationFailedError, UnknownTopicIdError
from kafkalite_server.handlers.leader_hints import FETCH_HINTS_SINCE, FETCH_REDIRECTS, LeaderHints
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.log.down_conversion import ConvertedRecords, down_convert, fetch_magic
from kafkalite_server.replication.replica_manager import FetchParams, FetchRequest, FetchResult
from kafkalite_server.replication.replica_selector import NO_PREFERENCE, preferred_read_replica
from kafkalite_server.security.api_checks import READ_TOPICS, REPLICA_CLUSTER_ACTION, declares

_DENIED = FetchResult(TopicAuthorizationFailedError.errno)
_UNKNOWN_ID = FetchResult(UnknownTopicIdError.errno)
BY_TOPIC_ID = 13
"""The first Fetch version naming topics by id."""
REPLICA_STATE_SINCE = 15
"""The first Fetch version naming the fetching replica in ``replica_state`` (KIP-903)."""
FOLLOWER_FETCH = replace(REPLICA_CLUSTER_ACTION, answered=TopicAuthorizationFailedError)
"""Kafka answers a follower's Fetch without ClusterAction per partition, as a topic error."""


@declares(replace(READ_TOPICS, when="from a consumer"), FOLLOWER_FETCH)
async def handle_fetch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    by_id = ctx.api_version >= BY_TOPIC_ID
    if by_id:  # None for an id of no topic here
        for topic in body["topics"]:
            topic["topic"] = ctx.broker.metadata_cache.topic_name(topic["topic_id"])
    replica_id = (body["replica_state"]["replica_id"] if ctx.api_version >= REPLICA_STATE_SINCE
                  else body["replica_id"])
    consumer = replica_id < 0
    redirected = _redirected(ctx, body) if consumer else {}
    max_bytes = min(body["max_bytes"], ctx.broker.config.fetch_max_bytes) if consumer \
        else body["max_bytes"]
    params = FetchParams(replica_id, 0 if redirected else body["max_wait_ms"],
                         body["min_bytes"], max_bytes, body["isolation_level"],
                         follower_reads=consumer and ctx.api_version >= 11)
    names = [topic["topic"] for topic in body["topics"] if topic["topic"] is not None]
    if consumer:
        denied = READ_TOPICS.denied(ctx, names)
    else:
        denied = frozenset() if FOLLOWER_FETCH.allows(ctx) else frozenset(names)
    requests = [FetchRequest(topic["topic"], p["partition"], p["fetch_offset"],
                             p["partition_max_bytes"], p["current_leader_epoch"],
                             p["last_fetched_epoch"])
                for topic in body["topics"] for p in topic["partitions"]
                if topic["topic"] is not None and topic["topic"] not in denied
                and (topic["topic"], p["partition"]) not in redirected]
    results = iter(await ctx.broker.replica_manager.fetch_messages(params, requests))
    magic = fetch_magic(ctx.api_version)
    converted_room = max_bytes
    hints = LeaderHints(ctx) if ctx.api_version >= FETCH_HINTS_SINCE else None
    responses = []
    for topic in body["topics"]:
        partitions = []
        for request in topic["partitions"]:
            key = (topic["topic"], request["partition"])
            if topic["topic"] is None:
                result = _UNKNOWN_ID
            elif topic["topic"] in denied:
                result = _DENIED
            elif key in redirected:
                result = _redirect_result(ctx, key)
            else:
                result = next(results)
            records = result.records
            if magic is not None and records:
                records = _down_converted(ctx, key, records, magic,
                                          min(request["partition_max_bytes"], converted_room))
                converted_room = max(converted_room - len(records), 0)
            partitions.append({
                "partition_index": request["partition"], "error_code": result.error_code,
                "high_watermark": result.high_watermark,
                "last_stable_offset": result.last_stable_offset,
                "log_start_offset": result.log_start_offset,
                "aborted_transactions": None if result.aborted is None else [
                    {"producer_id": txn.producer_id, "first_offset": txn.first_offset}
                    for txn in result.aborted],
                "preferred_read_replica": redirected.get(key, NO_PREFERENCE),
                **_diverging(result), "records": records})
            if hints is not None and result.error_code in FETCH_REDIRECTS:
                partitions[-1]["current_leader"] = hints.current_leader(*key)
        responses.append({"topic_id": topic["topic_id"], "partitions": partitions} if by_id
                         else {"topic": topic["topic"], "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses,
            "node_endpoints": [] if hints is None else hints.node_endpoints()}


def _diverging(result: FetchResult) -> dict[str, Any]:
    if result.diverging_epoch is None:
        return {}
    epoch, end_offset = result.diverging_epoch
    return {"diverging_epoch": {"epoch": epoch, "end_offset": end_offset}}


def _down_converted(ctx: RequestContext, key: tuple[str, int], records: Any, magic: int,
                    room: int) -> Any:
    """The partition's records for an old fetcher, converted within ``room`` and what is
    left of the broker's budget; none when that is spent (the client fetches again)."""
    budget = ctx.broker.down_conversion
    granted = budget.grant(room)
    if granted == 0:
        return b""
    partition = ctx.broker.replica_manager.partitions.get(key)
    limit = partition.log.decompression_limit.max_bytes if partition is not None else room
    converted = down_convert(records, magic, max_bytes=granted, max_decompressed=limit)
    if not isinstance(converted, ConvertedRecords):  # sent as stored: nothing converted
        budget.release(granted)
        return converted
    return budget.hold(converted, granted)


def _redirected(ctx: RequestContext, body: dict[str, Any]) -> dict[tuple[str, int], int]:
    """The partitions led here whose consumer should read from another replica: that one."""
    broker = ctx.broker
    selector = broker.config.replica_selector_class
    rack = body.get("rack_id") or ""
    if selector is None or not rack:
        return {}
    racks = {node: endpoint.rack for node, endpoint in broker.metadata_cache.brokers.items()}
    chosen = {}
    for topic in body["topics"]:
        for request in topic["partitions"]:
            key = (topic["topic"], request["partition"])
            partition = broker.replica_manager.partitions.get(key)
            if partition is None or not partition.is_leader:
                continue
            replica = preferred_read_replica(selector, rack, broker.config.broker_id,
                                             partition.isr,
                                             racks)
            if replica != NO_PREFERENCE:
                chosen[key] = replica
    return chosen


def _redirect_result(ctx: RequestContext, key: tuple[str, int]) -> FetchResult:
    """No records, and the leader's offsets, as Kafka answers with a preferred replica."""
    partition = ctx.broker.replica_manager.partitions[key]
    return FetchResult(0, partition.high_watermark, partition.log.log_start_offset, b"",
                       partition.log.last_stable_offset(partition.high_watermark))
