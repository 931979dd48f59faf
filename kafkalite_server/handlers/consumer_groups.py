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

from kafkalite.protocol.errors import TopicAuthorizationFailedError
from kafkalite_server.group.consumer_assignors import Assignment
from kafkalite_server.group.consumer_groups import CONSUMER_GROUP_TYPE, ConsumerGroup, Heartbeat
from kafkalite_server.group.service import GroupCoordinatorService
from kafkalite_server.handlers.groups import DESCRIBE_GROUPS, client_host
from kafkalite_server.handlers.modern_groups import (
    SUBSCRIBED_TOPICS,
    describe_state,
    described_assignment,
    described_group,
    described_member,
    heartbeat_response,
    subscription_refused,
)
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import DESCRIBE_TOPICS, READ_GROUP, declares, requires

Body = dict[str, Any]

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
    refused = subscription_refused(ctx, subscribed)
    if refused is not None:
        return refused
    result = await service.consumer.heartbeat(Heartbeat(
        group_id=body["group_id"], member_id=body["member_id"],
        member_epoch=body["member_epoch"], instance_id=body["instance_id"],
        rack_id=body["rack_id"], rebalance_timeout_ms=body["rebalance_timeout_ms"],
        subscribed_topic_names=subscribed,
        subscribed_topic_regex=body["subscribed_topic_regex"],
        server_assignor=body["server_assignor"], owned=_owned(body["topic_partitions"]),
        client_id=ctx.header.client_id or "", client_host=client_host(ctx)))
    return heartbeat_response(result,
                              service.consumer.groups.heartbeat_interval_ms(body["group_id"]))


@declares(DESCRIBE_GROUPS, DESCRIBED_TOPICS)
async def handle_consumer_group_describe(service: GroupCoordinatorService,
                                         ctx: RequestContext, body: Body) -> Body:
    groups = service.consumer.groups
    cache = ctx.broker.metadata_cache

    def name_of(id_: uuid.UUID) -> str:
        return cache.topic_name(id_) or ""

    answers = []
    for group_id in body["group_ids"]:
        entry, group = described_group(ctx, groups, group_id, CONSUMER_GROUP_TYPE)
        if group is None:
            answers.append(entry)
            continue
        if DESCRIBED_TOPICS.denied(ctx, _topics_named(group, name_of)):
            answers.append({**entry, "error_code": TopicAuthorizationFailedError.errno,
                            "error_message": "the group names topics the client is not "
                                             "authorized to describe"})
            continue
        describe_state(ctx, body, entry, group, group.assignor)
        entry["members"] = [{
            **described_member(m, m.member_epoch), "instance_id": m.instance_id,
            "subscribed_topic_regex": m.subscribed_regex,
            "assignment": described_assignment(m.current.assigned, name_of),
            "target_assignment": described_assignment(group.target.get(m.member_id, {}),
                                                      name_of),
        } for m in group.members.values()]
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
