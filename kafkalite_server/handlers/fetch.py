"""Fetch (1), versions 0-11: translate the request for ``ReplicaManager.fetch_messages``.

Every requested partition is in the response, in request order (kafka-python drops a
full-fetch response that leaves one out). The replica manager applies ``max_bytes``,
``partition_max_bytes`` (the first batch found is always sent whole), the high watermark
and the ``min_bytes``/``max_wait_ms`` wait; record bytes go out with sendfile, except for
Fetch v0-3, whose clients cannot read v2 batches (:mod:`~kafkalite_server.log.down_conversion`).
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import TopicAuthorizationFailedError
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.log.down_conversion import down_convert, fetch_magic
from kafkalite_server.replication.replica_manager import FetchParams, FetchRequest, FetchResult
from kafkalite_server.security.acls import AclOperation, ResourceType

_DENIED = FetchResult(TopicAuthorizationFailedError.errno)


async def handle_fetch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    params = FetchParams(body["replica_id"], body["max_wait_ms"], body["min_bytes"],
                         body["max_bytes"], body["isolation_level"])
    names = [topic["topic"] for topic in body["topics"]]
    if body["replica_id"] < 0:
        denied = ctx.denied(AclOperation.READ, ResourceType.TOPIC, names)
    else:  # a follower's fetch needs ClusterAction
        allowed = ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
        denied = frozenset() if allowed else frozenset(names)
    requests = [FetchRequest(topic["topic"], p["partition"], p["fetch_offset"],
                             p["partition_max_bytes"], p["current_leader_epoch"])
                for topic in body["topics"] for p in topic["partitions"]
                if topic["topic"] not in denied]
    results = iter(await ctx.broker.replica_manager.fetch_messages(params, requests))
    magic = fetch_magic(ctx.api_version)
    responses = []
    for topic in body["topics"]:
        partitions = []
        for request in topic["partitions"]:
            result = _DENIED if topic["topic"] in denied else next(results)
            records = result.records if magic is None else down_convert(result.records, magic)
            partitions.append({
                "partition_index": request["partition"], "error_code": result.error_code,
                "high_watermark": result.high_watermark,
                "last_stable_offset": result.last_stable_offset,
                "log_start_offset": result.log_start_offset,
                "aborted_transactions": None if result.aborted is None else [
                    {"producer_id": txn.producer_id, "first_offset": txn.first_offset}
                    for txn in result.aborted],
                "preferred_read_replica": -1, "records": records})
        responses.append({"topic": topic["topic"], "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
