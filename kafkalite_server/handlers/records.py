"""DeleteRecords (21): move partitions' log start offsets forward.

Each partition succeeds or fails on its own: OFFSET_OUT_OF_RANGE past the high watermark,
INVALID_TOPIC_EXCEPTION for an internal topic, NOT_LEADER_OR_FOLLOWER or
UNKNOWN_TOPIC_OR_PARTITION as for a fetch. With one replica per partition the new low
watermark is reached at once, so ``timeout_ms`` never has to be waited for.

Deleting records needs Delete on the topic (Kafka's rule): the partitions of the others
answer TOPIC_AUTHORIZATION_FAILED and keep every record.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import DELETE_TOPICS, declares


@declares(DELETE_TOPICS)
async def handle_delete_records(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    replicas = ctx.broker.replica_manager
    denied = DELETE_TOPICS.denied(ctx, [topic["name"] for topic in body["topics"]])
    topics = []
    for topic in body["topics"]:
        partitions = []
        for request in topic["partitions"]:
            index = request["partition_index"]
            try:
                if topic["name"] in denied:
                    raise DELETE_TOPICS.error(f"no Delete permission for {topic['name']!r}")
                low = replicas.delete_records(topic["name"], index, request["offset"])
            except BrokerResponseError as exc:
                partitions.append({"partition_index": index, "low_watermark": -1,
                                   "error_code": exc.errno})
                continue
            partitions.append({"partition_index": index, "low_watermark": low,
                               "error_code": 0})
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
