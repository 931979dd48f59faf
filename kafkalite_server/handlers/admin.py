"""Admin APIs: CreateTopics (19), DeleteTopics (20), CreatePartitions (37).

Each topic in a request succeeds or fails on its own; ``error_message`` carries the reason
(for INVALID_CONFIG it names the key). CreateTopics v5+ answers a created (or validated)
topic's partition count, replication factor and configs, the configs only to a principal
allowed DescribeConfigs on the topic (else ``topic_config_error_code`` says
TOPIC_AUTHORIZATION_FAILED), and v7+ its new id (KIP-516). DeleteTopics v6+ takes topics
by name or by id: an id of no topic is UNKNOWN_TOPIC_ID, and a principal without Describe
on the topic gets TOPIC_AUTHORIZATION_FAILED without its name, as Kafka answers. CreateTopics answers once this broker's metadata
cache has a leader for every new partition, or after the request's ``timeout_ms`` with
REQUEST_TIMED_OUT for the topics still without (Kafka's DelayedCreatePartitions): a client
that asks this broker for the topic right after the answer can use it. Creating (with
client-chosen settings) or deleting an internal topic, or adding partitions to one, is refused with INVALID_REQUEST (see
:mod:`kafkalite_server.cluster.internal_topics`). The config APIs are in :mod:`.configs`.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
)
from kafkalite_server.cluster.config_description import BrokerLayers, describe_topic
from kafkalite_server.cluster.internal_topics import refuse_if_internal
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.log.config import LogConfig
from kafkalite_server.security.acls import AclOperation
from kafkalite_server.security.api_checks import (
    ALTER_TOPICS,
    CONFIG_CHECKS,
    CREATE_TOPIC,
    DELETE_TOPICS,
    DESCRIBE_TOPICS,
    declares,
)
from kafkalite_server.topic_ids import ZERO

DESCRIBE_NEW_TOPIC_CONFIGS = replace(CONFIG_CHECKS[AclOperation.DESCRIBE_CONFIGS][0],
                                     when="v5+: the new topic's configs in the answer")
DESCRIBE_TOPIC_BY_ID = replace(DESCRIBE_TOPICS, when="v6+: a topic named by id")


def _message(exc: BrokerResponseError) -> str:
    return exc.context or exc.message


@declares(CREATE_TOPIC, DESCRIBE_NEW_TOPIC_CONFIGS)
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
            configs = {entry["name"]: entry["value"] for entry in topic["configs"]}
            topic_id = await controller.create_topic(
                name, topic["num_partitions"], topic["replication_factor"], configs,
                assignments={a["partition_index"]: a["broker_ids"]
                             for a in topic["assignments"]},
                validate_only=body["validate_only"])
        except BrokerResponseError as exc:
            results.append({"name": name, "topic_id": ZERO, "error_code": exc.errno,
                            "error_message": _message(exc), "configs": None})
            continue
        results.append({"name": name, "topic_id": topic_id, "error_code": 0,
                        "error_message": None, **_created(ctx, topic, configs)})
        if not body["validate_only"]:
            created[name] = _partition_count(ctx, topic)
    await _await_leaders(ctx, created, body["timeout_ms"], results)
    return {"throttle_time_ms": 0, "topics": results}


def _created(ctx: RequestContext, topic: dict[str, Any],
             configs: dict[str, str | None]) -> dict[str, Any]:
    """What v5+ answers of a topic created (or that would be): partition count,
    replication factor and, to a principal allowed DescribeConfigs on it, its configs."""
    assignments = topic["assignments"]
    factor = (len(assignments[0]["broker_ids"]) if assignments
              else ctx.broker.config.default_replication_factor
              if topic["replication_factor"] == -1 else topic["replication_factor"])
    answer: dict[str, Any] = {"num_partitions": _partition_count(ctx, topic),
                              "replication_factor": factor}
    if not DESCRIBE_NEW_TOPIC_CONFIGS.allows(ctx, topic["name"]):
        return {**answer, "topic_config_error_code": TopicAuthorizationFailedError.errno,
                "configs": None}
    controller = ctx.broker.controller
    overrides = {key: value for key, value in configs.items() if value is not None}
    effective = LogConfig.from_topic_configs(controller.default_log_config, overrides)
    entries = describe_topic(effective, overrides,
                             BrokerLayers.of(ctx.broker.config, controller.dynamic_configs))
    return {**answer, "configs": [
        {"name": e["name"], "value": e["value"], "read_only": e["read_only"],
         "config_source": e["config_source"], "is_sensitive": e["is_sensitive"]}
        for e in entries]}


def _partition_count(ctx: RequestContext, topic: dict[str, Any]) -> int:
    if topic["assignments"]:
        return len(topic["assignments"])
    count: int = topic["num_partitions"]
    return ctx.broker.config.num_partitions if count == -1 else count


async def _await_leaders(ctx: RequestContext, created: dict[str, int], timeout_ms: int,
                         results: list[dict[str, Any]], done: str = "created") -> None:
    """Holds the answer until every created (or grown) topic has its partitions, each
    with a leader, in this broker's cache (at most ``timeout_ms``; 0 or less answers at
    once, as Kafka's DelayedCreateTopics and DelayedCreatePartitions do); a topic still
    without them then answers REQUEST_TIMED_OUT (the change was made, and clients retry)."""
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
            result["error_message"] = (f"topic {name!r} was {done} but its partitions had "
                                       f"no leader within {timeout_ms} ms")


@declares(DESCRIBE_TOPIC_BY_ID, DELETE_TOPICS)
async def handle_delete_topics(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    cache = ctx.broker.metadata_cache
    asked: list[tuple[str | None, uuid.UUID]] = (
        [(t["name"], t["topic_id"]) for t in body["topics"]] if ctx.api_version >= 6
        else [(name, ZERO) for name in body["topic_names"]])
    results = []
    for name, topic_id in asked:
        try:
            if name is None:  # v6+: named by id
                name = cache.topic_name(topic_id)
                if name is None:
                    raise UnknownTopicIdError(f"no topic has id {topic_id}")
                if not DESCRIBE_TOPIC_BY_ID.allows(ctx, name):
                    name = None
                    raise TopicAuthorizationFailedError(f"no Describe permission for topic "
                                                        f"id {topic_id}")
            topic_id = cache.topic_id(name)
            if not DELETE_TOPICS.allows(ctx, name):
                raise TopicAuthorizationFailedError(f"no Delete permission for {name!r}")
            refuse_if_internal(name, "delete")
            await ctx.broker.controller.delete_topic(name)
        except BrokerResponseError as exc:
            results.append({"name": name, "topic_id": topic_id, "error_code": exc.errno,
                            "error_message": _message(exc)})
            continue
        results.append({"name": name, "topic_id": topic_id, "error_code": 0,
                        "error_message": None})
    return {"throttle_time_ms": 0, "responses": results}


@declares(ALTER_TOPICS)
async def handle_create_partitions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    results = []
    grown: dict[str, int] = {}
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
        if not body["validate_only"]:
            grown[topic["name"]] = topic["count"]
    await _await_leaders(ctx, grown, body["timeout_ms"], results, "given its new partitions")
    return {"throttle_time_ms": 0, "results": results}
