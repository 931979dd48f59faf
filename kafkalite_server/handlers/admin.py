"""Admin APIs: CreateTopics (19), DeleteTopics (20), CreatePartitions (37), DescribeConfigs (32).

Each topic in a request succeeds or fails on its own; ``error_message`` carries the reason
(for INVALID_CONFIG it names the key). Creating (with client-chosen settings) or deleting an
internal topic, or adding partitions to one, is refused with INVALID_REQUEST (see
:mod:`kafkalite_server.cluster.internal_topics`); no API changes a topic's configs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster.internal_topics import refuse_if_internal
from kafkalite_server.handlers.registry import RequestContext

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
SOURCE_TOPIC_CONFIG = 1
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5


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
            if controller.topic_overrides(name) is None:  # the broker creates its own, its way
                refuse_if_internal(name, "create")
            controller.create_topic(
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
            refuse_if_internal(name, "delete")
            ctx.broker.controller.delete_topic(name)
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
            refuse_if_internal(topic["name"], "add partitions to")
            ctx.broker.controller.create_partitions(
                topic["name"], topic["count"],
                None if assignments is None else [a["broker_ids"] for a in assignments],
                validate_only=body["validate_only"])
        except BrokerResponseError as exc:
            results.append({"name": topic["name"], "error_code": exc.errno,
                            "error_message": _message(exc)})
            continue
        results.append({"name": topic["name"], "error_code": 0, "error_message": None})
    return {"throttle_time_ms": 0, "results": results}


async def handle_describe_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    results = []
    for resource in body["resources"]:
        kind, name = resource["resource_type"], resource["resource_name"]
        try:
            rows = _config_rows(ctx, kind, name)
        except BrokerResponseError as exc:
            results.append({"error_code": exc.errno, "error_message": _message(exc),
                            "resource_type": kind, "resource_name": name, "configs": []})
            continue
        wanted = resource["configuration_keys"]
        configs = [
            {"name": key, "value": value, "read_only": kind == RESOURCE_BROKER,
             "is_default": source == SOURCE_DEFAULT_CONFIG, "config_source": source,
             "is_sensitive": False, "synonyms": [], "config_type": 0, "documentation": None}
            for key, value, source in rows if wanted is None or key in wanted
        ]
        results.append({"error_code": 0, "error_message": None, "resource_type": kind,
                        "resource_name": name, "configs": configs})
    return {"throttle_time_ms": 0, "results": results}


def _config_rows(ctx: RequestContext, kind: int, name: str) -> list[tuple[str, str, int]]:
    controller = ctx.broker.controller
    if kind == RESOURCE_TOPIC:
        overrides = controller.topic_overrides(name)
        if overrides is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        return [(key, value, SOURCE_TOPIC_CONFIG if key in overrides
                 else SOURCE_DEFAULT_CONFIG)
                for key, value, _same in controller.topic_config(name).describe(
                    controller.default_log_config)]
    if kind == RESOURCE_BROKER:
        if name not in ("", str(ctx.broker.config.broker_id)):
            raise InvalidRequestError(f"this is broker {ctx.broker.config.broker_id}, "
                                      f"not {name!r}")
        return [(key, value, SOURCE_DEFAULT_CONFIG if default else SOURCE_STATIC_BROKER_CONFIG)
                for key, value, default in ctx.broker.config.describe()]
    raise InvalidRequestError(f"resource type {kind} is not supported")
