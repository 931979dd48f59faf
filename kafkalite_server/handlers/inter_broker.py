"""The controller's requests (LeaderAndIsr 4, StopReplica 5, UpdateMetadata 6) and the
brokers' ControlledShutdown (7).

The first three decode into controller messages for the broker's inbox (which fences an
older controller epoch with STALE_CONTROLLER_EPOCH, an epoch never elected likewise, and a
message for an earlier incarnation of the broker with STALE_BROKER_EPOCH).
ControlledShutdown is answered by the controller only (another broker says
NOT_CONTROLLER), and refused for an earlier incarnation of the stopping broker.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.cluster import wire
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import CLUSTER_ACTION, requires


def _partition_errors(errors: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    return [{"topic_name": topic, "partition_index": index, "error_code": code}
            for (topic, index), code in errors.items()]


@requires(CLUSTER_ACTION)
async def handle_leader_and_isr(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    message = wire.leader_and_isr_from(body)
    try:
        errors = await ctx.broker.inbox.receive(message)
    except BrokerResponseError as exc:
        return {"error_code": exc.errno,
                **wire.leader_and_isr_errors(ctx.api_version, {}, message)}
    return {"error_code": 0, **wire.leader_and_isr_errors(ctx.api_version, errors, message)}


@requires(CLUSTER_ACTION)
async def handle_stop_replica(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    try:
        errors = await ctx.broker.inbox.receive(wire.stop_replica_from(body))
    except BrokerResponseError as exc:
        return {"error_code": exc.errno, "partition_errors": []}
    return {"error_code": 0, "partition_errors": _partition_errors(errors)}


@requires(CLUSTER_ACTION)
async def handle_update_metadata(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    try:
        await ctx.broker.inbox.receive(wire.update_metadata_from(body))
    except BrokerResponseError as exc:
        return {"error_code": exc.errno}
    return {"error_code": 0}


@requires(CLUSTER_ACTION)
async def handle_controlled_shutdown(ctx: RequestContext,
                                     body: dict[str, Any]) -> dict[str, Any]:
    try:
        remaining = await ctx.broker.membership.controlled_shutdown(body["broker_id"],
                                                                    body["broker_epoch"])
    except BrokerResponseError as exc:
        return {"error_code": exc.errno, "remaining_partitions": []}
    return {"error_code": 0, "remaining_partitions": [
        {"topic_name": topic, "partition_index": index} for topic, index in remaining]}
