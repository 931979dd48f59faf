"""One-line authorization for whole requests: ``@requires(operation, resource type, field)``
on a handler answers the request with an authorization error, without calling the handler,
when the principal may not act on the resource the request names.

Requests about many topics (Produce, Fetch, Metadata) check per topic in their handlers with
``ctx.denied`` / ``ctx.authorize``; requests about one group or one transactional id, and
the controller's requests to brokers (ClusterAction on the Cluster), are checked here.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from kafkalite_server.security.acls import CLUSTER_NAME, AclOperation, ResourceType

Body = dict[str, Any]
Denial = Callable[[Body, int], Body]

_ERRORS: dict[ResourceType, type[BrokerResponseError]] = {
    ResourceType.GROUP: GroupAuthorizationFailedError,
    ResourceType.CLUSTER: ClusterAuthorizationFailedError,
    ResourceType.TRANSACTIONAL_ID: TransactionalIdAuthorizationFailedError,
}


def top_level_error(body: Body, errno: int) -> Body:
    return {"throttle_time_ms": 0, "error_code": errno}


def per_partition_error(body: Body, errno: int) -> Body:
    """OffsetCommit's answer: the error on every partition of the request."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": topic["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": errno}
            for p in topic["partitions"]]}
        for topic in body["topics"]]}


def txn_partition_error(body: Body, errno: int) -> Body:
    """AddPartitionsToTxn's answer (v0-3): the error on every partition of the request."""
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": topic["name"], "results_by_partition": [
            {"partition_index": index, "partition_error_code": errno}
            for index in topic["partitions"]]}
        for topic in body["v3_and_below_topics"]]}


def txn_markers_error(body: Body, errno: int) -> Body:
    """WriteTxnMarkers' answer: the error on every partition of every marker."""
    return {"markers": [
        {"producer_id": marker["producer_id"], "topics": [
            {"name": topic["name"], "partitions": [
                {"partition_index": index, "error_code": errno}
                for index in topic["partition_indexes"]]}
            for topic in marker["topics"]]}
        for marker in body["markers"]]}


def requires(operation: AclOperation, resource_type: ResourceType, field: str | None = None,
             deny: Denial = top_level_error) -> Callable[[Any], Any]:
    """Handler decorator; ``field`` names the request field holding the resource name (the
    Cluster resource when None; a null value is not checked: InitProducerId without a
    transactional id). The handler's last two arguments are (ctx, body)."""
    errno = _ERRORS[resource_type].errno

    def decorate(handler: Callable[..., Awaitable[Body | None]]) -> Any:
        @functools.wraps(handler)
        async def checked(*args: Any) -> Body | None:
            ctx, body = args[-2], args[-1]
            name = CLUSTER_NAME if field is None else body[field]
            if name is not None and not ctx.authorize(operation, resource_type, name):
                return deny(body, errno)
            return await handler(*args)
        return checked

    return decorate


_CONFIG_TOPIC = 2
"""The config resource type of a topic (DescribeConfigs, AlterConfigs); brokers are the
Cluster resource for authorization."""


def check_config_access(ctx: Any, operation: AclOperation, config_resource_type: int,
                        name: str) -> None:
    """DescribeConfigs / AlterConfigs on one config resource: raises the authorization error
    (TOPIC_ or CLUSTER_AUTHORIZATION_FAILED) that its entry in the response carries."""
    if config_resource_type == _CONFIG_TOPIC:
        if not ctx.authorize(operation, ResourceType.TOPIC, name):
            raise TopicAuthorizationFailedError(f"{operation.name} on topic {name!r}")
    elif not ctx.authorize(operation, ResourceType.CLUSTER):
        raise ClusterAuthorizationFailedError(f"{operation.name} on the cluster")
