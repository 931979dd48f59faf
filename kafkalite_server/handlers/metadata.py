"""Metadata (3): brokers, controller, cluster id, and topics with their partition leaders.

Authorized operations (v8+) are reported only when asked for, all allowed (no authorizer).
Topics that do not exist are created on the spot when ``auto.create.topics.enable`` is on
and the request allows it (v4+ flag; always for v0-3), so the answer is immediately usable.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED
from kafkalite_server.cluster.authorized_operations import CLUSTER_OPERATIONS, TOPIC_OPERATIONS
from kafkalite_server.cluster.image import MetadataImage, TopicInfo
from kafkalite_server.cluster.topics import INTERNAL_TOPICS
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.handlers.registry import RequestContext


async def handle_metadata(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    controller = ctx.broker.controller
    image = controller.image
    requested = body["topics"]
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [_describe_topic(image, info) for info in image.topics.values()]
    else:
        auto_create = controller.config.auto_create_topics_enable and (
            body["allow_auto_topic_creation"])
        topics = []
        for entry in requested:
            name = entry["name"]
            info = image.topics.get(name)
            if info is None and auto_create:
                try:
                    info = (ctx.broker.group_coordinator.ensure_offsets_topic()
                            if name == OFFSETS_TOPIC else controller.create_topic(name))
                except BrokerResponseError as exc:
                    topics.append(_topic_error(name, exc.errno))
                    continue
            if info is None:
                topics.append(_topic_error(name, UnknownTopicOrPartitionError.errno))
            else:
                topics.append(_describe_topic(image, info))
    if body["include_topic_authorized_operations"]:
        for topic in topics:
            topic["topic_authorized_operations"] = TOPIC_OPERATIONS
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": None}
                    for b in sorted(image.brokers.values(), key=lambda b: b.node_id)],
        "cluster_id": image.cluster_id,
        "controller_id": image.controller_id,
        "topics": topics,
        "cluster_authorized_operations": (CLUSTER_OPERATIONS
                                          if body["include_cluster_authorized_operations"]
                                          else AUTHORIZED_OPERATIONS_NOT_REQUESTED),
    }


def _topic_error(name: str, errno: int) -> dict[str, Any]:
    return {"error_code": errno, "name": name, "is_internal": name in INTERNAL_TOPICS,
            "partitions": []}


def _describe_topic(image: MetadataImage, info: TopicInfo) -> dict[str, Any]:
    partitions = []
    for index, partition in enumerate(info.partitions):
        alive = partition.leader in image.brokers
        leader = partition.leader if alive else -1
        partitions.append({
            "error_code": 0 if alive else LeaderNotAvailableError.errno,
            "partition_index": index,
            "leader_id": leader,
            "leader_epoch": partition.leader_epoch,
            "replica_nodes": [partition.leader],
            "isr_nodes": [leader] if alive else [],
            "offline_replicas": [] if alive else [partition.leader],
        })
    return {"error_code": 0, "name": info.name, "is_internal": info.name in INTERNAL_TOPICS,
            "partitions": partitions}
