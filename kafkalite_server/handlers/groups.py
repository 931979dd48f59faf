"""Group APIs: FindCoordinator (key type 0 groups, 1 transactional ids), JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete,
DescribeGroups, ListGroups, DeleteGroups.

Each handler translates between the wire body (a dict, see kafkalite.protocol.schemas) and
the coordinator's calls; every decision about groups is the coordinator's.

Authorization follows Kafka's KafkaApis: the group's permission first (the whole request is
refused), then Read on each topic whose offsets are committed or deleted and Describe on
each topic whose offsets are fetched (those partitions answer TOPIC_AUTHORIZATION_FAILED;
an OffsetFetch of every partition leaves them out). FindCoordinator needs Describe on the
group or on the transactional id, checked before anything is created for it.

JoinGroup v8+ and LeaveGroup v5+ carry the member's reason (KIP-800): it is logged, as
Kafka's coordinator logs it, and changes nothing else. JoinGroup v9+ lets the coordinator
tell a static leader that rejoins a Stable group that it leads but must skip the
assignment (KIP-814). FindCoordinator v5 and v6 add only answers this broker does not give
(TRANSACTION_ABORTABLE; key type 2, share-partition coordinators, answered INVALID_REQUEST).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace
from typing import Any

from kafkalite.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafkalite.protocol.errors import (
    BrokerResponseError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    GroupSubscribedToTopicError,
    InvalidRequestError,
    KafkaStorageError,
    UnknownTopicOrPartitionError,
    UnstableOffsetCommitError,
)
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED
from kafkalite_server.cluster.authorized_operations import authorized_operations
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.group.consumer_assignors import Assignment
from kafkalite_server.group.consumer_groups import CONSUMER_GROUP_TYPE, ConsumerGroup
from kafkalite_server.group.consumer_service import CLASSIC_GROUP_TYPE
from kafkalite_server.group.coordinator import JoinRequest, LeavingMember
from kafkalite_server.group.offsets import OffsetCommitEntry, TopicPartition
from kafkalite_server.group.results import LeaveResult
from kafkalite_server.group.service import GroupCoordinatorService
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.handlers.transactions import fenced_error
from kafkalite_server.security.acls import AclOperation, ResourceType
from kafkalite_server.security.api_checks import (
    DESCRIBE_GROUP,
    DESCRIBE_TOPICS,
    LIST_GROUPS,
    READ_GROUP,
    READ_TOPICS,
    WRITE_TRANSACTIONAL_ID,
    Check,
    declares,
    per_partition_error,
    requires,
    top_level_error,
)
from kafkalite_server.txn.verification import for_txn_offset_commit

Body = dict[str, Any]
log = logging.getLogger(__name__)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
BATCHED_FIND_COORDINATOR_VERSION = 4
SKIP_ASSIGNMENT_VERSION = 9
"""JoinGroup's first version that can tell a returning static leader to skip the
assignment (KIP-814)."""
MEMBER_EPOCH_COMMIT_VERSION = 9
"""OffsetCommit's first version a KIP-848 member commits with (its member epoch)."""
MULTI_GROUP_FETCH_VERSION = 8
"""OffsetFetch names its groups in a list from this version (KIP-709)."""

COORDINATOR_KEY_CHECKS = {
    GROUP_KEY_TYPE: replace(DESCRIBE_GROUP, when="key type 0"),
    TRANSACTION_KEY_TYPE: Check(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                when="key type 1"),
}
"""FindCoordinator: what finding each kind of coordinator needs."""
DELETE_GROUP = Check(AclOperation.DELETE, ResourceType.GROUP)
DESCRIBE_GROUPS = Check(AclOperation.DESCRIBE, ResourceType.GROUP, "each group")
DELETE_GROUPS = Check(AclOperation.DELETE, ResourceType.GROUP, "each group")
FETCHED_TOPICS = replace(DESCRIBE_TOPICS, when="partitions named")
ALL_FETCHED_TOPICS = replace(DESCRIBE_TOPICS, when="every partition asked for", filters=True)


def client_host(ctx: RequestContext) -> str:
    """Kafka reports a member's host as Java's InetAddress.toString(): ``/127.0.0.1``."""
    host = ctx.peer.rsplit(":", 1)[0] if ":" in ctx.peer else ctx.peer
    return f"/{host}"


@declares(*COORDINATOR_KEY_CHECKS.values())
async def handle_find_coordinator(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    key_type = body.get("key_type", GROUP_KEY_TYPE)
    if ctx.api_version < BATCHED_FIND_COORDINATOR_VERSION:
        return {"throttle_time_ms": 0,
                **await _find_coordinator(service, ctx, key_type, body["key"])}
    return {
        "throttle_time_ms": 0,
        "coordinators": [
            {"key": key, **await _find_coordinator(service, ctx, key_type, key)}
            for key in body["coordinator_keys"]
        ],
    }


async def _find_coordinator(service: GroupCoordinatorService, ctx: RequestContext,
                            key_type: int, key: str) -> Body:
    """The coordinator of one key, as the fields v0-3 responses and v4 entries share."""
    no_node: Body = {"node_id": -1, "host": "", "port": -1}
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return {**no_node, "error_code": InvalidRequestError.errno,
                "error_message": f"unknown coordinator key type {key_type}"}
    check = COORDINATOR_KEY_CHECKS[key_type]
    if not check.allows(ctx, key):
        return {**no_node, "error_code": check.error.errno, "error_message": None}
    try:
        if key_type == TRANSACTION_KEY_TYPE:
            endpoint = await ctx.broker.txn_coordinator.runtime.coordinator_for(key)
        else:
            endpoint = await service.runtime.coordinator_for(key)
    except KafkaStorageError as exc:  # the offsets topic could not be saved: retry later
        return {**no_node, "error_code": CoordinatorNotAvailableError.errno,
                "error_message": exc.context}
    except BrokerResponseError as exc:  # e.g. the state topic cannot be created here
        return {**no_node, "error_code": CoordinatorNotAvailableError.errno,
                "error_message": exc.context or None}
    if endpoint is None:
        return {**no_node, "error_code": CoordinatorNotAvailableError.errno,
                "error_message": "the coordinator's state partition has no live leader"}
    endpoint = endpoint.on(ctx.listener)
    return {"error_code": 0, "error_message": None,
            "node_id": endpoint.node_id, "host": endpoint.host, "port": endpoint.port}


@requires(READ_GROUP, "group_id")
async def handle_join_group(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    version = ctx.api_version
    if body["reason"]:
        log.info("group %s: member %r joins (client reason: %s)", body["group_id"],
                 body["member_id"], body["reason"])
    request = JoinRequest(
        group_id=body["group_id"],
        member_id=body["member_id"],
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
        session_timeout_ms=body["session_timeout_ms"],
        # v0 has no rebalance timeout: Kafka uses the session timeout for both.
        rebalance_timeout_ms=body["rebalance_timeout_ms"] if version >= 1
        else body["session_timeout_ms"],
        protocol_type=body["protocol_type"],
        protocols=[(p["name"], bytes(p["metadata"])) for p in body["protocols"]],
        group_instance_id=body.get("group_instance_id"),
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= SKIP_ASSIGNMENT_VERSION,
    )
    # a consumer group (KIP-848) answers its classic members itself
    result = await service.consumer.classic_join(request) or await service.join(request)
    return {
        "throttle_time_ms": 0,
        "error_code": result.error,
        "generation_id": result.generation_id,
        # v7+ names the group's protocol type and may leave the protocol null (an error)
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name if version >= 7 else result.protocol_name or "",
        "leader": result.leader_id,
        "member_id": result.member_id,
        "skip_assignment": result.skip_assignment,
        "members": [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
             "metadata": m.metadata}
            for m in result.members
        ],
    }


@requires(READ_GROUP, "group_id")
async def handle_sync_group(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    """Answered once the group's assignment is in the ISR of its offsets partition, as Kafka
    stores it (``acks=-1``): a member never acts on an assignment a new coordinator would not
    know; a write the ISR cannot take is answered with its coordinator error."""
    assignments = {a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]}
    result = await service.consumer.classic_sync(
        body["group_id"], body["generation_id"], body["member_id"],
        body.get("group_instance_id")) or await service.sync(
        body["group_id"],
        body["generation_id"],
        body["member_id"],
        assignments,
        body.get("group_instance_id"),
    )
    error = result.error or await service.runtime.committed(body["group_id"])
    # v5+ names the group's protocol type and chosen protocol, which clients check
    return {"throttle_time_ms": 0, "error_code": error,
            "assignment": b"" if error else result.assignment,
            "protocol_type": result.protocol_type, "protocol_name": result.protocol_name}


@requires(READ_GROUP, "group_id")
async def handle_heartbeat(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    error = service.consumer.classic_heartbeat(
        body["group_id"], body["generation_id"], body["member_id"], body.get("group_instance_id")
    )
    if error is None:
        error = service.coordinator.heartbeat(
            body["group_id"], body["generation_id"], body["member_id"],
            body.get("group_instance_id"))
    return {"throttle_time_ms": 0, "error_code": error}


@requires(READ_GROUP, "group_id")
async def handle_leave_group(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    if ctx.api_version >= 3:
        leaving = [LeavingMember(m["member_id"], m["group_instance_id"]) for m in body["members"]]
        for member in body["members"]:
            if member["reason"]:
                log.info("group %s: member %r leaves (client reason: %s)", body["group_id"],
                         member["member_id"], member["reason"])
    else:
        leaving = [LeavingMember(body["member_id"])]
    result = await _leave_consumer_group(service, body["group_id"], leaving) \
        or service.coordinator.leave_group(body["group_id"], leaving)
    if ctx.api_version < 3:
        error = result.error or (result.member_errors[0] if result.member_errors else 0)
        return {"throttle_time_ms": 0, "error_code": error}
    return {
        "throttle_time_ms": 0,
        "error_code": result.error,
        "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "error_code": error}
            for (member_id, instance_id), error in zip(leaving, result.member_errors, strict=False)
        ],
    }


async def _leave_consumer_group(service: GroupCoordinatorService, group_id: str,
                                leaving: list[LeavingMember]) -> LeaveResult | None:
    """Classic members leaving a consumer group (None: the group is not one here)."""
    errors = []
    for member in leaving:
        error = await service.consumer.classic_leave(group_id, member.member_id,
                                                     member.group_instance_id)
        if error is None:
            return None
        errors.append(error)
    return LeaveResult(0, errors)


@requires(READ_GROUP, "group_id", per_partition_error)
@declares(READ_TOPICS)
async def handle_offset_commit(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    metadata = ctx.broker.metadata_cache
    denied = READ_TOPICS.denied(ctx, [topic["name"] for topic in body["topics"]])
    refused: dict[TopicPartition, int] = {}
    entries: dict[TopicPartition, OffsetCommitEntry] = {}
    for topic in body["topics"]:
        for p in topic["partitions"]:
            tp = TopicPartition(topic["name"], p["partition_index"])
            if tp.topic in denied:
                refused[tp] = READ_TOPICS.error.errno
                continue
            if metadata.partition(tp.topic, tp.partition) is None:
                # Kafka refuses commits for partitions it does not know
                refused[tp] = UnknownTopicOrPartitionError.errno
                continue
            entries[tp] = OffsetCommitEntry(
                p["committed_offset"], p["committed_leader_epoch"], p["committed_metadata"]
            )
    group_id, epoch, member_id = (body["group_id"], body["generation_id_or_member_epoch"],
                                  body["member_id"])
    consumer_error = service.consumer.groups.validate_commit(
        group_id, member_id, epoch,
        member_epoch_api=ctx.api_version >= MEMBER_EPOCH_COMMIT_VERSION)
    if consumer_error:
        results = dict.fromkeys(entries, consumer_error)
    elif consumer_error == 0:
        # the member epoch was checked: the offsets are stored as a simple commit's
        results = service.coordinator.commit_offsets(
            group_id, -1, "", entries, retention_ms=body["retention_time_ms"]) if entries else {}
    else:
        results = service.coordinator.commit_offsets(
            group_id,
            epoch,
            member_id,
            entries,
            group_instance_id=body.get("group_instance_id"),
            retention_ms=body["retention_time_ms"],
        ) if entries else {}
    replication_error = await service.runtime.committed(body["group_id"]) if results else 0
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": topic["name"],
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": _partition_error(
                            TopicPartition(topic["name"], p["partition_index"]), results,
                            refused, replication_error
                        ),
                    }
                    for p in topic["partitions"]
                ],
            }
            for topic in body["topics"]
        ],
    }


@requires(DELETE_GROUP, "group_id")
@declares(READ_TOPICS)
async def handle_offset_delete(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    metadata = ctx.broker.metadata_cache
    asked = [
        TopicPartition(topic["name"], p["partition_index"])
        for topic in body["topics"]
        for p in topic["partitions"]
    ]
    denied = READ_TOPICS.denied(ctx, {tp.topic for tp in asked})
    # Like OffsetCommit, a partition the cluster does not have is refused up front.
    refused = {tp: READ_TOPICS.error.errno if tp.topic in denied
               else UnknownTopicOrPartitionError.errno for tp in asked
               if tp.topic in denied or metadata.partition(tp.topic, tp.partition) is None}
    # a consumer group's offsets are held by the classic coordinator as a member-less
    # group's: the topics its members subscribe to are protected here
    subscribed = service.consumer.groups.subscribed_topics(body["group_id"])
    refused.update({tp: GroupSubscribedToTopicError.errno for tp in asked
                    if tp not in refused and tp.topic in subscribed})
    result = service.coordinator.delete_offsets(
        body["group_id"], [tp for tp in asked if tp not in refused]
    )
    if result.error:
        return {"error_code": result.error, "throttle_time_ms": 0, "topics": []}
    by_topic: dict[str, list[Body]] = defaultdict(list)
    for tp in asked:
        by_topic[tp.topic].append({
            "partition_index": tp.partition,
            "error_code": _partition_error(tp, result.partitions, refused),
        })
    return {
        "error_code": 0,
        "throttle_time_ms": 0,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
    }


def _partition_error(
    tp: TopicPartition, results: dict[TopicPartition, int], refused: dict[TopicPartition, int],
    replication_error: int = 0,
) -> int:
    """A partition refused up front keeps its error; the others report the replication
    failure of the whole commit, if any, else their own outcome."""
    return refused.get(tp) or replication_error or results[tp]


@requires(WRITE_TRANSACTIONAL_ID, "transactional_id", per_partition_error)
@requires(READ_GROUP, "group_id", per_partition_error)
@declares(READ_TOPICS)
async def handle_txn_offset_commit(ctx: RequestContext, body: Body) -> Body:
    """TxnOffsetCommit: the transaction coordinator, wherever it is, confirms the producer
    added the group's offsets partition (AddOffsetsToTxn) to its ongoing transaction
    (KIP-890's verification); the offsets then wait for its marker."""
    service: GroupCoordinatorService = ctx.broker.group_coordinator
    metadata = ctx.broker.metadata_cache
    requested = [(TopicPartition(t["name"], p["partition_index"]), p)
                 for t in body["topics"] for p in t["partitions"]]
    denied = READ_TOPICS.denied(ctx, {tp.topic for tp, _ in requested})
    errors = {tp: READ_TOPICS.error.errno if tp.topic in denied
              else UnknownTopicOrPartitionError.errno for tp, _ in requested
              if tp.topic in denied or metadata.partition(tp.topic, tp.partition) is None}
    entries = {tp: OffsetCommitEntry(p["committed_offset"], p["committed_leader_epoch"],
                                     p["committed_metadata"])
               for tp, p in requested if tp not in errors}
    error = await _verified(ctx, service, body) if entries else 0
    if error:
        errors.update(dict.fromkeys(entries, error))
    elif entries:
        stored = service.txn_offsets.commit(
            body["group_id"], body["producer_id"], body["producer_epoch"], entries,
            generation_id=body.get("generation_id", -1), member_id=body.get("member_id", ""),
            group_instance_id=body.get("group_instance_id"))
        # Like OffsetCommit: answered once the offsets are in the ISR of the group's partition.
        replication_error = (await service.runtime.committed(body["group_id"])
                             if 0 in stored.values() else 0)
        errors.update({tp: code or replication_error for tp, code in stored.items()})
    by_topic: dict[str, list[Body]] = defaultdict(list)
    for tp, _ in requested:
        by_topic[tp.topic].append({"partition_index": tp.partition, "error_code": errors[tp]})
    return {"throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}


async def _verified(ctx: RequestContext, service: GroupCoordinatorService, body: Body) -> int:
    """0 if the transaction holds the group's offsets partition, else the error to answer."""
    verifier = ctx.broker.txn_coordinator.verifier
    if not verifier.enabled:
        return 0
    offsets_partition = (OFFSETS_TOPIC, service.coordinator.partition_for(body["group_id"]))
    answers = await verifier.verify(body["transactional_id"], body["producer_id"],
                                    body["producer_epoch"], [offsets_partition])
    return for_txn_offset_commit(answers[offsets_partition],
                                 fenced_error("txn_offset_commit", ctx.api_version))


@declares(DESCRIBE_GROUP, FETCHED_TOPICS, ALL_FETCHED_TOPICS)
async def handle_offset_fetch(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    """One group (v1-7) or several (v8+, each authorized and answered on its own).
    ``require_stable`` (v7+, KIP-447): a partition with a transactional offset commit
    waiting for its transaction's end answers UNSTABLE_OFFSET_COMMIT, which the client
    retries, instead of the offset committed before it. v9 names the asking member of a
    consumer group (KIP-848): an unknown member or an old epoch is refused."""
    stable = body.get("require_stable", False)
    if ctx.api_version < MULTI_GROUP_FETCH_VERSION:
        if not DESCRIBE_GROUP.allows(ctx, body["group_id"]):
            return top_level_error(body, DESCRIBE_GROUP.error.errno)
        found, error = _fetched(service, ctx, body["group_id"], body["topics"], stable)
        return {"throttle_time_ms": 0, "topics": found, "error_code": error}
    groups = []
    for group in body["groups"]:
        group_id = group["group_id"]
        if not DESCRIBE_GROUP.allows(ctx, group_id):
            error = DESCRIBE_GROUP.error.errno
        else:
            error = _member_error(service, group_id, group.get("member_id"),
                                  group.get("member_epoch", -1))
        topics: list[Body] = []
        if not error:
            topics, error = _fetched(service, ctx, group_id, group["topics"], stable)
        groups.append({"group_id": group_id, "topics": topics, "error_code": error})
    return {"throttle_time_ms": 0, "groups": groups}


def _member_error(service: GroupCoordinatorService, group_id: str, member_id: str | None,
                  member_epoch: int) -> int:
    """A consumer group's member asking (v9) must be known at its current epoch; an
    admin (no member) may always ask."""
    if not member_id and member_epoch < 0:
        return 0
    error = service.consumer.groups.validate_commit(group_id, member_id or "", member_epoch)
    return error or 0


def _fetched(service: GroupCoordinatorService, ctx: RequestContext, group_id: str,
             requested: list[Body] | None, require_stable: bool) -> tuple[list[Body], int]:
    """The group's committed offsets by topic, and the group's error code."""
    denied = frozenset() if requested is None else FETCHED_TOPICS.denied(
        ctx, [t["name"] for t in requested])
    partitions = None if requested is None else [
        TopicPartition(t["name"], index) for t in requested for index in t["partition_indexes"]
        if t["name"] not in denied
    ]
    result = service.coordinator.fetch_offsets(group_id, partitions)
    unstable = (service.txn_offsets.pending_by_group().get(group_id, set())
                if require_stable else set())
    by_topic: dict[str, list[Body]] = defaultdict(list)
    for tp, committed in result.offsets.items():
        if requested is None and not ALL_FETCHED_TOPICS.allows(ctx, tp.topic):
            continue
        if tp in unstable:
            committed, error = None, UnstableOffsetCommitError.errno
        else:
            error = result.error
        by_topic[tp.topic].append({
            "partition_index": tp.partition,
            "committed_offset": committed.offset if committed else -1,
            "committed_leader_epoch": committed.leader_epoch if committed else -1,
            "metadata": committed.metadata if committed else "",
            "error_code": error,
        })
    for topic in requested or ():
        if topic["name"] in denied:
            by_topic[topic["name"]] += [
                {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1,
                 "metadata": "", "error_code": FETCHED_TOPICS.error.errno}
                for index in topic["partition_indexes"]]
    return ([{"name": name, "partitions": parts} for name, parts in by_topic.items()],
            result.error)


@declares(DESCRIBE_GROUPS)
async def handle_describe_groups(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    # The principal's operations on each group; Integer.MIN_VALUE unless asked for.
    def operations(group_id: str) -> int:
        if not body.get("include_authorized_operations"):
            return AUTHORIZED_OPERATIONS_NOT_REQUESTED
        return authorized_operations(ctx.authorize, ResourceType.GROUP, group_id)

    denied = DESCRIBE_GROUPS.denied(ctx, body["groups"])
    consumer = {g: group for g in body["groups"] if g not in denied
                and (group := service.consumer.groups.group(g)) is not None}
    return {
        "throttle_time_ms": 0,
        "groups": [
            {**_described_consumer_group(ctx, group), "authorized_operations": operations(g)}
            for g, group in consumer.items()
        ] + [
            {
                "error_code": d.error,
                "group_id": d.group_id,
                "group_state": d.state,
                "protocol_type": d.protocol_type,
                "protocol_data": d.protocol,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in d.members
                ],
                "authorized_operations": operations(d.group_id),
            }
            for d in service.coordinator.describe_groups(
                [g for g in body["groups"] if g not in denied and g not in consumer])
        ] + [{"error_code": GroupAuthorizationFailedError.errno, "group_id": g} for g in denied],
    }


def _described_consumer_group(ctx: RequestContext, group: ConsumerGroup) -> Body:
    """A KIP-848 consumer group as a classic client sees it (Kafka's answer): protocol type
    ``consumer``, the assignor as the protocol, each member's subscription and current
    assignment in the classic consumer protocol's encoding (version 0)."""
    cache = ctx.broker.metadata_cache

    def partitions(assignment: Assignment) -> list[tuple[str, list[int]]]:
        named = ((cache.topic_name(id_), sorted(ps))
                 for id_, ps in sorted(assignment.items()))
        return [(name, ps) for name, ps in named if name is not None]

    return {
        "error_code": 0, "group_id": group.group_id, "group_state": group.state,
        "protocol_type": CONSUMER_GROUP_TYPE, "protocol_data": group.assignor,
        "members": [{
            "member_id": m.member_id, "group_instance_id": m.instance_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "member_metadata": ConsumerProtocolSubscription(list(m.subscribed_topics)).encode(0),
            "member_assignment": ConsumerProtocolAssignment(
                partitions(m.current.assigned)).encode(0),
        } for m in group.members.values()],
    }


@declares(LIST_GROUPS)
async def handle_list_groups(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    error, listings = service.coordinator.list_groups()
    # Both filters match case-insensitively, as Kafka's do.
    states = {state.lower() for state in body["states_filter"]}
    types = {kind.lower() for kind in body["types_filter"]}
    consumer = service.consumer.groups
    groups = [(g.group_id, g.protocol_type, g.state, CLASSIC_GROUP_TYPE) for g in listings
              if consumer.group(g.group_id) is None]  # not a consumer group's offsets
    groups += [(g.group_id, CONSUMER_GROUP_TYPE, g.state, CONSUMER_GROUP_TYPE)
               for g in consumer.groups()]
    groups += ctx.broker.share.groups.listings()
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "groups": [{"group_id": group_id, "protocol_type": protocol_type,
                    "group_state": state, "group_type": kind}
                   for group_id, protocol_type, state, kind in groups
                   if (not states or state.lower() in states)
                   and (not types or kind.lower() in types)
                   and LIST_GROUPS.allows(ctx, group_id)],
    }


@declares(DELETE_GROUPS)
async def handle_delete_groups(
    service: GroupCoordinatorService, ctx: RequestContext, body: Body
) -> Body:
    denied = DELETE_GROUPS.denied(ctx, body["groups_names"])
    share = ctx.broker.share.groups
    shared = [g for g in body["groups_names"] if g not in denied and share.coordinates(g)]
    consumer = [g for g in body["groups_names"]
                if g not in denied and service.consumer.groups.group(g) is not None]
    consumer_errors = {g: await service.consumer.delete(g) for g in consumer}
    results = service.coordinator.delete_groups(
        [g for g in body["groups_names"] if g not in denied and g not in shared
         and not consumer_errors.get(g)])
    results.update({g: error for g, error in consumer_errors.items() if error})
    results.update({g: await share.delete(g) for g in shared})
    results.update(dict.fromkeys(denied, GroupAuthorizationFailedError.errno))
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": g, "error_code": e} for g, e in results.items()],
    }
