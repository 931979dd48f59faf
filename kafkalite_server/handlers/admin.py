"""Admin APIs: CreateTopics (19), DeleteTopics (20), CreatePartitions (37).

Each topic in a request succeeds or fails on its own; ``error_message`` carries the reason
(for INVALID_CONFIG it names the key). CreateTopics answers once this broker's metadata
cache has a leader for every new partition, or after the request's ``timeout_ms`` with
REQUEST_TIMED_OUT for the topics still without (Kafka's DelayedCreatePartitions): a client
that asks this broker for the topic right after the answer can use it. Creating (with
client-chosen settings) or deleting an internal topic, or adding partitions to one, is refused with INVALID_REQUEST (see
:mod:`kafkalite_server.cluster.internal_topics`). The config APIs are in :mod:`.configs`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
)
from kafkalite_server.cluster.internal_topics import refuse_if_internal
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import (
    ALTER_TOPICS,
    CREATE_TOPIC,
    DELETE_TOPICS,
    declares,
)


def _message(exc: BrokerResponseError) -> str:
    return exc.context or exc.message


@declares(CREATE_TOPIC)
async def handle_create_topics(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    controller = ctx.broker.controller
    names = Counter(topic["name"] for topic in body["topics"])
    results = []
    created: dict[str, int] = {}
    """New topic -> its partition count, whose leaders the answer waits for."""
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
        if not body["validate_only"]:
            created[name] = _partition_count(ctx, topic)
    await _await_leaders(ctx, created, body["timeout_ms"], results)
    return {"throttle_time_ms": 0, "topics": results}


def _partition_count(ctx: RequestContext, topic: dict[str, Any]) -> int:
    if topic["assignments"]:
        return len(topic["assignments"])
    count: int = topic["num_partitions"]
    return ctx.broker.config.num_partitions if count == -1 else count


async def _await_leaders(ctx: RequestContext, created: dict[str, int], timeout_ms: int,
                         results: list[dict[str, Any]]) -> None:
    """Holds the answer until every created topic has its leaders in this broker's cache
    (at most ``timeout_ms``; 0 or less answers at once, as Kafka does); a topic still
    without them then answers REQUEST_TIMED_OUT (it was created, and clients retry)."""
    cache = ctx.broker.metadata_cache
    if not created or timeout_ms <= 0:
        return
    await cache.wait_until(lambda: all(cache.has_leaders(name, count)
                                       for name, count in created.items()),
                           timeout_ms / 1000)
    for result in results:
        name = result["name"]
        if name in created and not cache.has_leaders(name, created[name]):
            result["error_code"] = RequestTimedOutError.errno
            result["error_message"] = (f"topic {name!r} was created but its partitions had "
                                       f"no leader within {timeout_ms} ms")


@declares(DELETE_TOPICS)
async def handle_delete_topics(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    results = []
    for name in body["topic_names"]:
        try:
            if not DELETE_TOPICS.allows(ctx, name):
                raise TopicAuthorizationFailedError(f"no Delete permission for {name!r}")
            refuse_if_internal(name, "delete")
            await ctx.broker.controller.delete_topic(name)
        except BrokerResponseError as exc:
            results.append({"name": name, "error_code": exc.errno})
            continue
        results.append({"name": name, "error_code": 0})
    return {"throttle_time_ms": 0, "responses": results}


@declares(ALTER_TOPICS)
async def handle_create_partitions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    results = []
    for topic in body["topics"]:
        assignments = topic["assignments"]
        try:
            if not ALTER_TOPICS.allows(ctx, topic["name"]):
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
