"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31).

As in Kafka: without an authorizer they answer SECURITY_DISABLED; describing ACLs needs
Describe on the Cluster, changing them Alter (CLUSTER_AUTHORIZATION_FAILED otherwise).
Changes are persisted in the cluster's metadata store before they take effect.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    SecurityDisabledError,
)
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from kafkalite_server.security.api_checks import ALTER_CLUSTER, DESCRIBE_CLUSTER, declares


def _enum(kind: type, value: int) -> Any:
    try:
        return kind(value)
    except ValueError:
        return kind(0)


def _filter(entry: dict[str, Any], prefix: str) -> AclFilter:
    return AclFilter(_enum(ResourceType, entry[f"resource_type{prefix}"]),
                     entry[f"resource_name{prefix}"], _enum(PatternType,
                                                            entry["pattern_type_filter"]),
                     entry["principal_filter"], entry["host_filter"],
                     _enum(AclOperation, entry["operation"]),
                     _enum(AclPermission, entry["permission_type"]))


def _disabled(ctx: RequestContext) -> bool:
    return not ctx.broker.security.authorizer_enabled


@declares(DESCRIBE_CLUSTER)
async def handle_describe_acls(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0,
                                "error_message": None, "resources": []}
    if _disabled(ctx):
        return {**response, "error_code": SecurityDisabledError.errno,
                "error_message": "no authorizer is configured (authorizer.class.name)"}
    if not DESCRIBE_CLUSTER.allows(ctx):
        return {**response, "error_code": DESCRIBE_CLUSTER.error.errno}
    selected = _filter(body, "_filter")
    problem = selected.problem()
    if problem is not None:
        return {**response, "error_code": InvalidRequestError.errno, "error_message": problem}
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for binding in ctx.broker.security.store.acls():
        if selected.matches(binding):
            grouped.setdefault((binding.resource_type, binding.name, binding.pattern), []).append(
                {"principal": binding.principal, "host": binding.host,
                 "operation": binding.operation, "permission_type": binding.permission})
    response["resources"] = [
        {"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": acls}
        for (kind, name, pattern), acls in grouped.items()]
    return response


@declares(ALTER_CLUSTER)
async def handle_create_acls(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    creations = body["creations"]
    if _disabled(ctx) or not ALTER_CLUSTER.allows(ctx):
        error = SecurityDisabledError if _disabled(ctx) else ALTER_CLUSTER.error
        return {"throttle_time_ms": 0,
                "results": [{"error_code": error.errno, "error_message": None}
                            for _ in creations]}
    results: list[dict[str, Any]] = []
    valid: list[AclBinding] = []
    for entry in creations:
        binding = AclBinding(_enum(ResourceType, entry["resource_type"]),
                             entry["resource_name"],
                             _enum(PatternType, entry["resource_pattern_type"]),
                             entry["principal"], entry["host"],
                             _enum(AclOperation, entry["operation"]),
                             _enum(AclPermission, entry["permission_type"]))
        problem = binding.problem()
        if problem is None:
            valid.append(binding)
        results.append({"error_code": InvalidRequestError.errno if problem else 0,
                        "error_message": problem})
    try:
        await ctx.broker.security.add_acls(valid)
    except BrokerResponseError as exc:
        results = [{"error_code": r["error_code"] or exc.errno,
                    "error_message": r["error_message"] or exc.context} for r in results]
    return {"throttle_time_ms": 0, "results": results}


@declares(ALTER_CLUSTER)
async def handle_delete_acls(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    filters = body["filters"]
    if _disabled(ctx) or not ALTER_CLUSTER.allows(ctx):
        error = SecurityDisabledError if _disabled(ctx) else ALTER_CLUSTER.error
        return {"throttle_time_ms": 0,
                "filter_results": [{"error_code": error.errno, "error_message": None,
                                    "matching_acls": []} for _ in filters]}
    store = ctx.broker.security.store
    existing = list(store.acls())
    results: list[dict[str, Any]] = []
    doomed: list[AclBinding] = []
    for entry in filters:
        selected = _filter(entry, "_filter")
        problem = selected.problem()
        if problem is not None:
            results.append({"error_code": InvalidRequestError.errno, "error_message": problem,
                            "matching_acls": []})
            continue
        matched = [b for b in existing if selected.matches(b)]
        doomed += matched
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": b.resource_type,
             "resource_name": b.name, "pattern_type": b.pattern, "principal": b.principal,
             "host": b.host, "operation": b.operation, "permission_type": b.permission}
            for b in matched]})
    try:
        await ctx.broker.security.remove_acls(doomed)
    except BrokerResponseError as exc:
        results = [{**r, "error_code": r["error_code"] or exc.errno,
                    "error_message": r["error_message"] or exc.context, "matching_acls": []}
                   for r in results]
    return {"throttle_time_ms": 0, "filter_results": results}
