"""DescribeClientQuotas (48) and AlterClientQuotas (49) (KIP-546).

Describing quotas needs DescribeConfigs on the Cluster, changing them AlterConfigs on the
Cluster (CLUSTER_AUTHORIZATION_FAILED otherwise), as in Kafka. Any broker answers both: it
reads the quotas it follows, and writes a change to the coordination store itself, as
Kafka's ZooKeeper-mode brokers do. Each entry of an alteration succeeds or fails on its
own, with Kafka's INVALID_REQUEST and message for a bad entity, an unknown key, a value
that is not positive or a fraction for a byte rate; ``validate_only`` checks and writes
nothing.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidRequestError,
    UnknownServerError,
)
from kafkalite_server.cluster.coordination import CoordinationError
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.quotas.client_quotas import (
    QuotaEntity,
    QuotaOp,
    altered,
    entity_from_wire,
    filter_from_wire,
    matching,
)
from kafkalite_server.security.acls import AclOperation, ResourceType
from kafkalite_server.security.api_checks import Check, declares, requires

DESCRIBE_CLUSTER_CONFIGS = Check(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER)
ALTER_CLUSTER_CONFIGS = Check(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER)


def _entity_out(entity: QuotaEntity) -> list[dict[str, Any]]:
    return [{"entity_type": kind, "entity_name": name} for kind, name in entity.components()]


@requires(DESCRIBE_CLUSTER_CONFIGS)
async def handle_describe_client_quotas(ctx: RequestContext,
                                        body: dict[str, Any]) -> dict[str, Any]:
    try:
        components = filter_from_wire((c["entity_type"], c["match_type"], c["match"])
                                      for c in body["components"])
    except InvalidRequestError as exc:
        return {"throttle_time_ms": 0, "error_code": exc.errno, "error_message": exc.context,
                "entries": None}
    found = matching(ctx.broker.client_quotas.quotas, components, body["strict"])
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": [
        {"entity": _entity_out(entity),
         "values": [{"key": key, "value": value} for key, value in sorted(quotas.items())]}
        for entity, quotas in found]}


def _refuse_all(body: dict[str, Any], errno: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": errno, "error_message": None, "entity": entry["entity"]}
        for entry in body["entries"]]}


@declares(ALTER_CLUSTER_CONFIGS)
async def handle_alter_client_quotas(ctx: RequestContext,
                                     body: dict[str, Any]) -> dict[str, Any]:
    if not ALTER_CLUSTER_CONFIGS.allows(ctx):
        return _refuse_all(body, ALTER_CLUSTER_CONFIGS.error.errno)
    store = ctx.broker.client_quotas
    errors: dict[int, BrokerResponseError] = {}
    changes: dict[QuotaEntity, list[QuotaOp]] = {}
    owners: dict[QuotaEntity, int] = {}
    for index, entry in enumerate(body["entries"]):
        try:
            entity = entity_from_wire((e["entity_type"], e["entity_name"])
                                      for e in entry["entity"])
            if entity in owners:
                raise InvalidRequestError(f"Duplicate quota entity {entity}")
            owners[entity] = index
            ops = [QuotaOp(op["key"], op["value"], op["remove"]) for op in entry["ops"]]
            altered(store.quotas.get(entity, {}), ops)  # refuses bad ops before any write
            changes[entity] = ops
        except InvalidRequestError as exc:
            errors[index] = exc
    if changes and not body["validate_only"]:
        try:
            await store.alter(changes)
        except CoordinationError as exc:
            failed = UnknownServerError(f"quotas not stored: {exc}")
            errors.update({owners[entity]: failed for entity in changes})
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": errors[index].errno if index in errors else 0,
         "error_message": errors[index].context if index in errors else None,
         "entity": entry["entity"]}
        for index, entry in enumerate(body["entries"])]}
