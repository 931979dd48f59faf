"""Config APIs: DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44).

Resources are topics (type 2), brokers (type 4: name ``""`` for the cluster-wide
dynamic defaults, or this broker's id) and groups (type 32: share groups' configs, kept by
the group's coordinator: :mod:`kafkalite_server.share.service`). Topics and brokers go
through the broker's controller client, so a standalone broker and a ZooKeeper cluster's
brokers answer alike. Each resource succeeds or fails on its own, with an
``error_message`` naming the key for INVALID_CONFIG. Other resource types (broker
loggers, client metrics) answer INVALID_REQUEST.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from kafkalite.protocol.config_codes import ConfigType
from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster.config_changes import edit_from_wire, edited, replaced
from kafkalite_server.cluster.config_description import (
    BrokerLayers,
    describe_broker,
    describe_topic,
)
from kafkalite_server.cluster.dynamic_config import CLUSTER_DEFAULT, DYNAMIC_KEYS
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.log.config import TOPIC_CONFIGS
from kafkalite_server.security.acls import AclOperation
from kafkalite_server.security.api_checks import CONFIG_CHECKS, check_config_access, declares
from kafkalite_server.share.service import passed_on

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32

_LIST_DEFAULTS = {
    **{key: spec.default or "" for key, spec in DYNAMIC_KEYS.items()
       if spec.type == ConfigType.LIST},
    **{key: spec.synonyms[0][1] or "" if spec.synonyms else ""
       for key, spec in TOPIC_CONFIGS.items() if spec.type == ConfigType.LIST},
}
"""Where APPEND/SUBTRACT start on a list key without an override: Kafka's default."""


def _message(exc: BrokerResponseError) -> str:
    return exc.context or exc.message


def _check_broker_name(ctx: RequestContext, name: str) -> None:
    if name not in (CLUSTER_DEFAULT, str(ctx.broker.config.broker_id)):
        raise InvalidRequestError(f"this is broker {ctx.broker.config.broker_id}: name it, "
                                  f"or use '' for the cluster-wide default, not {name!r}")


def _check_type(kind: int) -> None:
    if kind not in (RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_GROUP):
        raise InvalidRequestError(f"config resource type {kind} is not supported")


@declares(*CONFIG_CHECKS[AclOperation.DESCRIBE_CONFIGS])
async def handle_describe_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    results = []
    for resource in body["resources"]:
        kind, name = resource["resource_type"], resource["resource_name"]
        try:
            entries = await _describe(ctx, kind, name)
        except BrokerResponseError as exc:
            results.append({"error_code": exc.errno, "error_message": _message(exc),
                            "resource_type": kind, "resource_name": name, "configs": []})
            continue
        wanted = resource["configuration_keys"]
        if wanted is not None:
            entries = [entry for entry in entries if entry["name"] in wanted]
        if not body["include_synonyms"]:
            entries = [{**entry, "synonyms": []} for entry in entries]
        if not body["include_documentation"]:
            entries = [{**entry, "documentation": None} for entry in entries]
        results.append({"error_code": 0, "error_message": None, "resource_type": kind,
                        "resource_name": name, "configs": entries})
    return {"throttle_time_ms": 0, "results": results}


async def _describe(ctx: RequestContext, kind: int, name: str) -> list[dict[str, Any]]:
    _check_type(kind)
    check_config_access(ctx, AclOperation.DESCRIBE_CONFIGS, kind, name)
    controller = ctx.broker.controller
    layers = BrokerLayers.of(ctx.broker.config, controller.dynamic_configs)
    if kind == RESOURCE_GROUP:
        share = ctx.broker.share
        overrides = await share.group_overrides(name, passed_on=passed_on(ctx.header.client_id))
        return share.group_configs.entries(overrides)
    if kind == RESOURCE_TOPIC:
        overrides = await _topic_overrides(ctx, name)
        return describe_topic(controller.topic_config(name), overrides, layers)
    _check_broker_name(ctx, name)
    return describe_broker(name, ctx.broker.config, layers)


async def _current(ctx: RequestContext, kind: int, name: str) -> dict[str, str]:
    """The resource's overrides now: a topic's own configs, or a dynamic broker layer."""
    _check_type(kind)
    if kind == RESOURCE_GROUP:
        return await ctx.broker.share.group_overrides(
            name, passed_on=passed_on(ctx.header.client_id))
    if kind == RESOURCE_TOPIC:
        return await _topic_overrides(ctx, name)
    _check_broker_name(ctx, name)
    return ctx.broker.controller.dynamic_configs.layer(name)


async def _topic_overrides(ctx: RequestContext, name: str) -> dict[str, str]:
    overrides = await ctx.broker.controller.topic_overrides(name)
    if overrides is None:
        raise UnknownTopicOrPartitionError(f"topic {name!r}")
    return overrides


async def _alter(ctx: RequestContext, body: dict[str, Any],
                 new_overrides: Callable[[dict[str, Any]], Awaitable[dict[str, str]]]
                 ) -> dict[str, Any]:
    controller = ctx.broker.controller
    seen = Counter((r["resource_type"], r["resource_name"]) for r in body["resources"])
    responses = []
    for resource in body["resources"]:
        kind, name = resource["resource_type"], resource["resource_name"]
        try:
            if seen[kind, name] > 1:
                raise InvalidRequestError(f"resource {name!r} of type {kind} appears more "
                                          "than once")
            check_config_access(ctx, AclOperation.ALTER_CONFIGS, kind, name)
            if kind == RESOURCE_GROUP:  # an unknown key is refused before the coordinator
                ctx.broker.share.check_group_config_names(
                    [entry["name"] for entry in resource["configs"]])
            configs = await new_overrides(resource)
            if kind == RESOURCE_GROUP:
                await ctx.broker.share.alter_group_configs(
                    name, configs, validate_only=body["validate_only"],
                    passed_on=passed_on(ctx.header.client_id))
            elif kind == RESOURCE_TOPIC:
                await controller.alter_topic_configs(name, configs,
                                                     validate_only=body["validate_only"])
            else:
                await controller.alter_broker_configs(name, configs,
                                                      validate_only=body["validate_only"])
        except BrokerResponseError as exc:
            responses.append({"error_code": exc.errno, "error_message": _message(exc),
                              "resource_type": kind, "resource_name": name})
            continue
        responses.append({"error_code": 0, "error_message": None, "resource_type": kind,
                          "resource_name": name})
    return {"throttle_time_ms": 0, "responses": responses}


@declares(*CONFIG_CHECKS[AclOperation.ALTER_CONFIGS])
async def handle_alter_configs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    async def new_overrides(resource: dict[str, Any]) -> dict[str, str]:
        await _current(ctx, resource["resource_type"], resource["resource_name"])  # exists
        return replaced([(entry["name"], entry["value"]) for entry in resource["configs"]])

    return await _alter(ctx, body, new_overrides)


@declares(*CONFIG_CHECKS[AclOperation.ALTER_CONFIGS])
async def handle_incremental_alter_configs(ctx: RequestContext,
                                           body: dict[str, Any]) -> dict[str, Any]:
    async def new_overrides(resource: dict[str, Any]) -> dict[str, str]:
        current = await _current(ctx, resource["resource_type"], resource["resource_name"])
        edits = [edit_from_wire(entry["name"], entry["config_operation"], entry["value"])
                 for entry in resource["configs"]]
        return edited(current, edits, _LIST_DEFAULTS)

    return await _alter(ctx, body, new_overrides)
