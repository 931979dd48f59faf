"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), served by the
controller (KIP-455): another broker answers NOT_CONTROLLER at the top level and admin
clients follow the controller id of their metadata.

An alteration is answered once each move is under way (stored, and the new replicas told
to fetch), not when it completes: ListPartitionReassignments shows it until the new
replicas are in sync and the old ones are gone. As in Kafka, altering needs Alter on the
Cluster and listing needs Describe on the Cluster.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import ALTER_CLUSTER, DESCRIBE_CLUSTER, requires

Body = dict[str, Any]


def _alter_refusal(body: Body, errno: int) -> Body:
    return _alter_response(errno, "reassigning partitions needs Alter on the Cluster", {})


@requires(ALTER_CLUSTER, deny=_alter_refusal)
async def handle_alter_partition_reassignments(ctx: RequestContext, body: Body) -> Body:
    requests = {(topic["name"], partition["partition_index"]): partition["replicas"]
                for topic in body["topics"] for partition in topic["partitions"]}
    try:
        results = await ctx.broker.controller.alter_reassignments(requests)
    except BrokerResponseError as exc:
        return _alter_response(exc.errno, exc.context or exc.message, {})
    return _alter_response(0, None, results)


def _alter_response(errno: int, message: str | None,
                    results: dict[tuple[str, int], BrokerResponseError | None]) -> Body:
    by_topic: dict[str, list[Body]] = {}
    for (topic, index), error in results.items():
        by_topic.setdefault(topic, []).append({
            "partition_index": index, "error_code": error.errno if error else 0,
            "error_message": (error.context or error.message) if error else None})
    return {"throttle_time_ms": 0, "error_code": errno, "error_message": message,
            "responses": [{"name": topic, "partitions": partitions}
                          for topic, partitions in by_topic.items()]}


def _list_refusal(body: Body, errno: int) -> Body:
    return {"throttle_time_ms": 0, "error_code": errno, "topics": [],
            "error_message": "listing reassignments needs Describe on the Cluster"}


@requires(DESCRIBE_CLUSTER, deny=_list_refusal)
async def handle_list_partition_reassignments(ctx: RequestContext, body: Body) -> Body:
    keys = None if body["topics"] is None else [
        (topic["name"], index) for topic in body["topics"]
        for index in topic["partition_indexes"]]
    try:
        moves = await ctx.broker.controller.list_reassignments(keys)
    except BrokerResponseError as exc:
        return {"throttle_time_ms": 0, "error_code": exc.errno,
                "error_message": exc.context or exc.message, "topics": []}
    by_topic: dict[str, list[Body]] = {}
    for (topic, index), move in moves.items():
        by_topic.setdefault(topic, []).append({
            "partition_index": index, "replicas": move.replicas,
            "adding_replicas": move.adding, "removing_replicas": move.removing})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": [
        {"name": topic, "partitions": partitions} for topic, partitions in by_topic.items()]}
