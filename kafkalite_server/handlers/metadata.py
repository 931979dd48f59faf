"""Metadata (3): brokers, controller, cluster id, and topics with leaders, replicas and ISR,
all from this broker's own metadata cache.

Topics that do not exist are requested from the controller on the spot when
``auto.create.topics.enable`` is on and the request allows it (v4+ flag; always for v0-3).
The topic answers LEADER_NOT_AVAILABLE until the controller has placed it (on a standalone
broker too: it is a one-broker cluster, and its controller acts a moment later). A topic
that another broker created a moment ago (this broker's cache does not have it yet, and the
creation finds it exists) also answers LEADER_NOT_AVAILABLE, as Kafka does: clients retry
that, while TOPIC_ALREADY_EXISTS would be fatal to them.

A broker that has registered but not yet heard from the controller holds the answer for
up to ``FIRST_VIEW_WAIT_S`` rather than answer with no brokers and no controller.

Authorized operations (v8+) are reported only when asked for, all allowed (no authorizer).

Topics carry their ids from v10 (:mod:`kafkalite_server.topic_ids`); v12 asks for topics by
id (a null name): an id no topic has answers UNKNOWN_TOPIC_ID with a null name, as Kafka.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    KafkaStorageError,
    LeaderNotAvailableError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED
from kafkalite_server.cluster.authorized_operations import authorized_operations
from kafkalite_server.cluster.messages import NO_LEADER, PartitionState
from kafkalite_server.cluster.metadata_cache import MetadataCache
from kafkalite_server.cluster.topics import INTERNAL_TOPICS
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.acls import AclOperation, ResourceType
from kafkalite_server.security.api_checks import CREATE_TOPIC, DESCRIBE_TOPICS, declares
from kafkalite_server.topic_ids import ZERO

FIRST_VIEW_WAIT_S = 5.0
"""How long a Metadata request waits for the controller's first UpdateMetadata to this
broker: normally milliseconds after registration; past this the (empty) view is answered
and the client retries."""


@declares(replace(DESCRIBE_TOPICS, when="topics named"),
          replace(DESCRIBE_TOPICS, when="every topic asked for", filters=True),
          replace(CREATE_TOPIC, when="auto-creation"))
async def handle_metadata(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    cache = ctx.broker.metadata_cache
    await cache.wait_first_update(FIRST_VIEW_WAIT_S)
    requested = body["topics"]
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [_describe_topic(ctx, name) for name in cache.topic_names()
                  if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name)]
    else:
        auto_create = ctx.broker.config.auto_create_topics_enable and (
            body["allow_auto_topic_creation"])
        topics = []
        for entry in requested:
            name = entry["name"]
            if name is None:  # v12: asked for by id
                name = cache.topic_name(entry["topic_id"])
                if name is None:
                    topics.append({"error_code": UnknownTopicIdError.errno, "name": None,
                                   "topic_id": entry["topic_id"], "partitions": []})
                    continue
            if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                topics.append(_topic_error(name, TopicAuthorizationFailedError.errno))
                continue
            if cache.partitions_of(name) is None and auto_create:
                try:
                    await _create(ctx, name)
                except TopicAlreadyExistsError:
                    pass  # created elsewhere moments ago: LEADER_NOT_AVAILABLE below
                except BrokerResponseError as exc:
                    topics.append(_topic_error(name, exc.errno))
                    continue
                if cache.partitions_of(name) is None:
                    topics.append(_topic_error(name, LeaderNotAvailableError.errno))
                    continue
            if cache.partitions_of(name) is None:
                topics.append(_topic_error(name, UnknownTopicOrPartitionError.errno))
            else:
                topics.append(_describe_topic(ctx, name))
    if body["include_topic_authorized_operations"]:
        for topic in topics:
            if topic["name"] is None:
                continue
            topic["topic_authorized_operations"] = authorized_operations(
                ctx.authorize, ResourceType.TOPIC, topic["name"])
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in (e.on(ctx.listener) for e in sorted(cache.brokers.values(),
                                                                  key=lambda b: b.node_id))],
        "cluster_id": cache.cluster_id,
        "controller_id": cache.controller_id,
        "topics": topics,
        "cluster_authorized_operations": (authorized_operations(ctx.authorize,
                                                                ResourceType.CLUSTER)
                                          if body["include_cluster_authorized_operations"]
                                          else AUTHORIZED_OPERATIONS_NOT_REQUESTED),
    }


async def _create(ctx: RequestContext, name: str) -> None:
    if not ctx.may_create_topic(name):
        raise TopicAuthorizationFailedError(f"no Create permission for {name!r}")
    if name == OFFSETS_TOPIC:
        await ctx.broker.group_coordinator.ensure_offsets_topic()
    else:
        await ctx.broker.controller.create_topic(name)


def _topic_error(name: str, errno: int) -> dict[str, Any]:
    return {"error_code": errno, "name": name, "topic_id": ZERO,
            "is_internal": name in INTERNAL_TOPICS, "partitions": []}


def _describe_topic(ctx: RequestContext, name: str) -> dict[str, Any]:
    cache: MetadataCache = ctx.broker.metadata_cache
    is_offline = ctx.broker.replica_manager.is_offline
    return {"error_code": 0, "name": name, "topic_id": cache.topic_id(name),
            "is_internal": name in INTERNAL_TOPICS,
            "partitions": [describe_partition(state, is_offline(name, state.partition))
                           for state in cache.partitions_of(name) or []]}


def describe_partition(state: PartitionState, led_from_failed_dir: bool) -> dict[str, Any]:
    """A partition this broker leads from a failed log dir (Kafka's offline replica) has no
    leader and says KAFKA_STORAGE_ERROR, listing the leader in ``offline_replicas``."""
    if led_from_failed_dir:
        return {
            "error_code": KafkaStorageError.errno,
            "partition_index": state.partition,
            "leader_id": NO_LEADER,
            "leader_epoch": state.leader_epoch,
            "replica_nodes": list(state.replicas),
            "isr_nodes": [r for r in state.isr if r != state.leader],
            "offline_replicas": sorted({*state.offline_replicas, state.leader}),
        }
    online = state.leader != NO_LEADER
    return {
        "error_code": 0 if online else LeaderNotAvailableError.errno,
        "partition_index": state.partition,
        "leader_id": state.leader,
        "leader_epoch": state.leader_epoch,
        "replica_nodes": list(state.replicas),
        "isr_nodes": list(state.isr),
        "offline_replicas": list(state.offline_replicas),
    }
