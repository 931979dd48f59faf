"""What the heartbeat and describe handlers of the modern group protocols (KIP-848
ConsumerGroupHeartbeat/Describe, KIP-932 ShareGroupHeartbeat/Describe) translate alike.

Authorization is Kafka's for both: the heartbeat is refused with TOPIC_AUTHORIZATION_FAILED
when the member subscribes to a topic the caller may not describe; a group the caller may
not describe answers GROUP_AUTHORIZATION_FAILED; a group this coordinator does not hold, or
one of another type, answers the ownership error or GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from kafkalite.protocol.errors import GroupAuthorizationFailedError, GroupIdNotFoundError
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED
from kafkalite_server.cluster.authorized_operations import authorized_operations
from kafkalite_server.group.modern_group import (
    HeartbeatResult,
    ModernGroup,
    ModernGroups,
    ModernMember,
)
from kafkalite_server.group.modern_records import wire_assignment
from kafkalite_server.handlers.groups import DESCRIBE_GROUPS
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.acls import ResourceType
from kafkalite_server.security.api_checks import DESCRIBE_TOPICS

Body = dict[str, Any]
G = TypeVar("G", bound=ModernGroup[Any])

SUBSCRIBED_TOPICS = replace(DESCRIBE_TOPICS, target="each subscribed topic")


def subscription_refused(ctx: RequestContext, subscribed: Sequence[str] | None) -> Body | None:
    """The heartbeat's answer when the member subscribes to a topic the caller may not
    describe; None when it may go on."""
    denied = SUBSCRIBED_TOPICS.denied(ctx, subscribed) if subscribed else None
    if not denied:
        return None
    return heartbeat_response(HeartbeatResult(
        SUBSCRIBED_TOPICS.error.errno, message=f"not authorized to describe {sorted(denied)}"),
        0)


def heartbeat_response(result: HeartbeatResult, heartbeat_interval_ms: int) -> Body:
    """A heartbeat's answer: a refused one carries no member, epoch or assignment."""
    if result.error:
        return {"throttle_time_ms": 0, "error_code": result.error,
                "error_message": result.message, "member_id": None, "member_epoch": -1,
                "heartbeat_interval_ms": 0, "assignment": None}
    assignment = None if result.assignment is None else {
        "topic_partitions": wire_assignment(result.assignment)}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": heartbeat_interval_ms, "assignment": assignment}


def described_group(ctx: RequestContext, groups: ModernGroups[G], group_id: str,
                    group_type: str) -> tuple[Body, G | None]:
    """A described group's entry, without its state and members, and the group; the entry
    carries the error and the group is None when it cannot be described."""
    entry: Body = {"group_id": group_id, "error_code": 0, "error_message": None,
                   "group_state": "", "group_epoch": -1, "assignment_epoch": -1,
                   "assignor_name": "", "members": [],
                   "authorized_operations": AUTHORIZED_OPERATIONS_NOT_REQUESTED}
    if not DESCRIBE_GROUPS.allows(ctx, group_id):
        return {**entry, "error_code": GroupAuthorizationFailedError.errno}, None
    error = groups.ownership.error_for(group_id)
    group = groups.group(group_id) if not error else None
    if error or group is None:
        return {**entry, "error_code": error or GroupIdNotFoundError.errno,
                "error_message": None if error else
                f"group {group_id!r} is not a {group_type} group"}, None
    return entry, group


def describe_state(ctx: RequestContext, body: Body, entry: Body, group: ModernGroup[Any],
                   assignor: str) -> None:
    """Fills a described group's state (its members are the protocol's to describe)."""
    entry.update(group_state=group.state, group_epoch=group.group_epoch,
                 assignment_epoch=group.assignment_epoch, assignor_name=assignor)
    if body["include_authorized_operations"]:
        entry["authorized_operations"] = authorized_operations(
            ctx.authorize, ResourceType.GROUP, group.group_id)


def described_member(member: ModernMember, member_epoch: int) -> Body:
    """The fields every protocol describes of a member."""
    return {"member_id": member.member_id, "rack_id": member.rack_id,
            "member_epoch": member_epoch, "client_id": member.client_id,
            "client_host": member.client_host,
            "subscribed_topic_names": list(member.subscribed_topics)}


def described_assignment(assignment: Mapping[uuid.UUID, Collection[int]],
                         name_of: Callable[[uuid.UUID], str]) -> Body:
    """An assignment as the describes answer it: each topic by id and name."""
    return {"topic_partitions": [
        {**entry, "topic_name": name_of(entry["topic_id"])}
        for entry in wire_assignment(assignment)]}
