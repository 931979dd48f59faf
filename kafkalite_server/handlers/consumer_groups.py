"""Consumer-group APIs (KIP-848) at the group coordinator: ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69). The handlers translate between the wire body and
:class:`~kafkalite_server.group.consumer_service.ConsumerGroupService`; every decision is
the coordinator's. Topics are named by id on the wire (:mod:`kafkalite_server.topic_ids`).

Authorization follows Kafka's KafkaApis: Read on the group (the whole heartbeat refused),
then Describe on every topic a member subscribes to (TOPIC_AUTHORIZATION_FAILED for the
heartbeat when any is denied); Describe on each group described, and a group whose
members subscribe to or are assigned a topic the caller may not describe answers
TOPIC_AUTHORIZATION_FAILED instead of its members.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    TopicAuthorizationFailedError,
)
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED
from kafkalite_server.cluster.authorized_operations import authorized_operations
from kafkalite_server.group.consumer_assignors import Assignment
from kafkalite_server.group.consumer_groups import ConsumerGroup, Heartbeat
from kafkalite_server.group.service import GroupCoordinatorService
from kafkalite_server.handlers.groups import client_host
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.acls import AclOperation, ResourceType
from kafkalite_server.security.api_checks import (
    DESCRIBE_TOPICS,
    READ_GROUP,
    Check,
    declares,
    requires,
)

Body = dict[str, Any]

SUBSCRIBED_TOPICS = replace(DESCRIBE_TOPICS, target="each subscribed topic")
DESCRIBE_GROUPS = Check(AclOperation.DESCRIBE, ResourceType.GROUP, "each group")
DESCRIBED_TOPICS = replace(DESCRIBE_TOPICS, target="each topic a described group names")


def _owned(topics: list[Body] | None) -> Assignment | None:
    if topics is None:
        return None
    return {t["topic_id"]: frozenset(t["partitions"]) for t in topics if t["partitions"]}


@requires(READ_GROUP, "group_id")
@declares(SUBSCRIBED_TOPICS)
async def handle_consumer_group_heartbeat(service: GroupCoordinatorService, ctx: RequestContext,
                                          body: Body) -> Body:
    subscribed = body["subscribed_topic_names"]
    refused: Body = {"throttle_time_ms": 0, "member_id": None, "member_epoch": -1,
                     "heartbeat_interval_ms": 0, "assignment": None}
    if subscribed:
        denied = SUBSCRIBED_TOPICS.denied(ctx, subscribed)
        if denied:
            return {**refused, "error_code": SUBSCRIBED_TOPICS.error.errno,
                    "error_message": f"not authorized to describe {sorted(denied)}"}
    result = await service.consumer.heartbeat(Heartbeat(
        group_id=body["group_id"], member_id=body["member_id"],
        member_epoch=body["member_epoch"], instance_id=body["instance_id"],
        rack_id=body["rack_id"], rebalance_timeout_ms=body["rebalance_timeout_ms"],
        subscribed_topic_names=subscribed,
        subscribed_topic_regex=body["subscribed_topic_regex"],
        server_assignor=body["server_assignor"], owned=_owned(body["topic_partitions"]),
        client_id=ctx.header.client_id or "", client_host=client_host(ctx)))
    if result.error:
        return {**refused, "error_code": result.error, "error_message": result.message}
    assignment = None if result.assignment is None else {"topic_partitions": [
        {"topic_id": id_, "partitions": sorted(partitions)}
        for id_, partitions in sorted(result.assignment.items())]}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": service.consumer.groups.config.heartbeat_interval_ms,
            "assignment": assignment}


@declares(DESCRIBE_GROUPS, DESCRIBED_TOPICS)
async def handle_consumer_group_describe(service: GroupCoordinatorService,
                                         ctx: RequestContext, body: Body) -> Body:
    groups = service.consumer.groups
    cache = ctx.broker.metadata_cache

    def name_of(id_: uuid.UUID) -> str:
        return cache.topic_name(id_) or ""

    def described(assignment: Assignment) -> Body:
        return {"topic_partitions": [
            {"topic_id": id_, "topic_name": name_of(id_), "partitions": sorted(partitions)}
            for id_, partitions in sorted(assignment.items())]}

    answers = []
    for group_id in body["group_ids"]:
        entry: Body = {"group_id": group_id, "error_code": 0, "error_message": None,
                       "group_state": "", "group_epoch": -1, "assignment_epoch": -1,
                       "assignor_name": "", "members": [],
                       "authorized_operations": AUTHORIZED_OPERATIONS_NOT_REQUESTED}
        if not DESCRIBE_GROUPS.allows(ctx, group_id):
            answers.append({**entry, "error_code": GroupAuthorizationFailedError.errno})
            continue
        error = groups.ownership.error_for(group_id)
        group = groups.group(group_id) if not error else None
        if error or group is None:
            answers.append({**entry, "error_code": error or GroupIdNotFoundError.errno,
                            "error_message": None if error else
                            f"group {group_id!r} is not a consumer group"})
            continue
        if DESCRIBED_TOPICS.denied(ctx, _topics_named(group, name_of)):
            answers.append({**entry, "error_code": TopicAuthorizationFailedError.errno,
                            "error_message": "the group names topics the client is not "
                                             "authorized to describe"})
            continue
        entry.update(group_state=group.state, group_epoch=group.group_epoch,
                     assignment_epoch=group.assignment_epoch, assignor_name=group.assignor)
        entry["members"] = [{
            "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "member_epoch": m.member_epoch, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_topics),
            "subscribed_topic_regex": m.subscribed_regex,
            "assignment": described(m.current.assigned),
            "target_assignment": described(group.target.get(m.member_id, {})),
        } for m in group.members.values()]
        if body["include_authorized_operations"]:
            entry["authorized_operations"] = authorized_operations(
                ctx.authorize, ResourceType.GROUP, group_id)
        answers.append(entry)
    return {"throttle_time_ms": 0, "groups": answers}


def _topics_named(group: ConsumerGroup, name_of: Any) -> set[str]:
    """Every topic the group's members subscribe to, own or are to own."""
    topics = {t for m in group.members.values() for t in m.subscribed_topics}
    for member in group.members.values():
        for assignment in (member.current.assigned, member.current.pending_revocation,
                           group.target.get(member.member_id, {})):
            topics.update(name_of(id_) for id_ in assignment)
    return topics - {""}
