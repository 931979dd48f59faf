"""Plugs share groups into a broker: the broker calls :func:`install` at start-up."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kafkalite.protocol import ApiKey
from kafkalite_server.handlers import share
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.share.service import ShareService

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

ShareHandler = Callable[[ShareService, RequestContext, dict[str, Any]],
                        Awaitable[dict[str, Any]]]

SHARE_HANDLERS: dict[ApiKey, ShareHandler] = {
    ApiKey.SHARE_GROUP_HEARTBEAT: share.handle_share_group_heartbeat,
    ApiKey.SHARE_GROUP_DESCRIBE: share.handle_share_group_describe,
    ApiKey.SHARE_FETCH: share.handle_share_fetch,
    ApiKey.SHARE_ACKNOWLEDGE: share.handle_share_acknowledge,
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: share.handle_initialize_share_group_state,
    ApiKey.READ_SHARE_GROUP_STATE: share.handle_read_share_group_state,
    ApiKey.WRITE_SHARE_GROUP_STATE: share.handle_write_share_group_state,
    ApiKey.DELETE_SHARE_GROUP_STATE: share.handle_delete_share_group_state,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: share.handle_read_share_group_state_summary,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: share.handle_describe_share_group_offsets,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: share.handle_alter_share_group_offsets,
}


def install(broker: Broker) -> ShareService:
    """Create the broker's share service and register the share API handlers."""
    service = ShareService(broker)
    for api_key, handler in SHARE_HANDLERS.items():
        broker.handlers.register(api_key, functools.partial(handler, service))
    return service
