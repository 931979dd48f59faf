"""Plugs the group coordinator into a broker: the broker calls :func:`install` at start-up."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kafkalite.protocol import ApiKey
from kafkalite_server.group.service import GroupCoordinatorService
from kafkalite_server.handlers import consumer_groups, groups
from kafkalite_server.handlers.registry import RequestContext

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

GroupHandler = Callable[
    [GroupCoordinatorService, RequestContext, dict[str, Any]], Awaitable[dict[str, Any]]
]

GROUP_HANDLERS: dict[ApiKey, GroupHandler] = {
    ApiKey.FIND_COORDINATOR: groups.handle_find_coordinator,
    ApiKey.JOIN_GROUP: groups.handle_join_group,
    ApiKey.SYNC_GROUP: groups.handle_sync_group,
    ApiKey.HEARTBEAT: groups.handle_heartbeat,
    ApiKey.LEAVE_GROUP: groups.handle_leave_group,
    ApiKey.OFFSET_COMMIT: groups.handle_offset_commit,
    ApiKey.OFFSET_FETCH: groups.handle_offset_fetch,
    ApiKey.DESCRIBE_GROUPS: groups.handle_describe_groups,
    ApiKey.LIST_GROUPS: groups.handle_list_groups,
    ApiKey.DELETE_GROUPS: groups.handle_delete_groups,
    ApiKey.OFFSET_DELETE: groups.handle_offset_delete,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_groups.handle_consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_groups.handle_consumer_group_describe,
}


def install(broker: Broker) -> GroupCoordinatorService:
    """Create the broker's coordinator service and register the group API handlers."""
    service = GroupCoordinatorService(broker)
    for api_key, handler in GROUP_HANDLERS.items():
        broker.handlers.register(api_key, functools.partial(handler, service))
    return service
