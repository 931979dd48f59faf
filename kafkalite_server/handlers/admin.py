"""Admin APIs: CreateTopics (19), DeleteTopics (20), CreatePartitions (37).

Each topic in a request succeeds or fails on its own; ``error_message`` carries the reason
(for INVALID_CONFIG it names the key). Creating (with client-chosen settings) or deleting an
internal topic, or adding partitions to one, is refused with INVALID_REQUEST (see
:mod:`kafkalite_server.cluster.internal_topics`). The config APIs are in :mod:`.configs`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    TopicAuthorizationFailedError,
)
from kafkalite_server.cluster.internal_topics import refuse_if_internal
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.acls import AclOperation, ResourceType


def _message(exc: BrokerResponseError) -> str:
    return exc.context or exc.message


async def handle_create_topics(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    controller = ctx.broker.controller
    names = Counter(topic["name"] for topic in body["topics"])
    results = []
    for topic in body["topics"]:
        name = topic["name"]
        try:
            if names[name] > 1:
                raise InvalidRequestError(f"topic {name!r} appears more than once")
            if not ctx.may_create_topic(name):
                raise TopicAuthorizationFailedError(f"no Create permission for {name!r}")
            if await controller.topic_overrides(name) is None:  # the broker creates its own
                refuse_if_internal(name, "create")
            await controller.create_topic(
                name, topic["num_partitions"], topic["replication_factor"],
                {entry["name"]: entry["value"] for entry in topic["configs"]},
                assignments={a["partition_index"]: a["broker_ids"]
                             for a in topic["assignments"]},
                validate_only=body["validate_only"])
        except BrokerResponseError as exc:
            results.append({"name": name, "error_code": exc.errno,
                            "error_message": _message(exc)})
            continue
        results.append({"name": name, "error_code": 0, "error_message": None})
    return {"throttle_time_ms": 0, "topics": results}


async def handle_delete_topics(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    results = []
    for name in body["topic_names"]:
        try:
            if not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, name):
                raise TopicAuthorizationFailedError(f"no Delete permission for {name!r}")
            refuse_if_internal(name, "delete")
            await ctx.broker.controller.delete_topic(name)
        except BrokerResponseError as exc:
            results.append({"name": name, "error_code": exc.errno})
            continue
        results.append({"name": name, "error_code": 0})
    return {"throttle_time_ms": 0, "responses": results}


async def handle_create_partitions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    results = []
    for topic in body["topics"]:
        assignments = topic["assignments"]
        try:
            if not ctx.authorize(AclOperation.ALTER, ResourceType.TOPIC, topic["name"]):
                raise TopicAuthorizationFailedError(f"no Alter permission for {topic['name']!r}")
            refuse_if_internal(topic["name"], "add partitions to")
            await ctx.broker.controller.create_partitions(
                topic["name"], topic["count"],
                None if assignments is None else [a["broker_ids"] for a in assignments],
                validate_only=body["validate_only"])
        except BrokerResponseError as exc:
            results.append({"name": topic["name"], "error_code": exc.errno,
                            "error_message": _message(exc)})
            continue
        results.append({"name": topic["name"], "error_code": 0, "error_message": None})
    return {"throttle_time_ms": 0, "results": results}
