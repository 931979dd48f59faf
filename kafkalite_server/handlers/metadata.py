"""Metadata (3): brokers, controller, cluster id, and topics with their partition leaders.

Topics that do not exist are created on the spot when ``auto.create.topics.enable`` is on
and the request allows it (v4+ flag; always for v0-3), so the answer is immediately usable.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    KafkaStorageError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster.controller import Controller
from kafkalite_server.cluster.image import TopicInfo
from kafkalite_server.cluster.topics import INTERNAL_TOPICS
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.handlers.registry import RequestContext


async def handle_metadata(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    controller = ctx.broker.controller
    image = controller.image
    requested = body["topics"]
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [_describe_topic(controller, info) for info in image.topics.values()]
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
                topics.append(_describe_topic(controller, info))
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": None}
                    for b in sorted(image.brokers.values(), key=lambda b: b.node_id)],
        "cluster_id": image.cluster_id,
        "controller_id": image.controller_id,
        "topics": topics,
    }


def _topic_error(name: str, errno: int) -> dict[str, Any]:
    return {"error_code": errno, "name": name, "is_internal": name in INTERNAL_TOPICS,
            "partitions": []}


def _describe_topic(controller: Controller, info: TopicInfo) -> dict[str, Any]:
    """A partition whose only replica is offline (its log dir failed) has no leader and
    says KAFKA_STORAGE_ERROR, listing the broker in ``offline_replicas``."""
    image = controller.image
    partitions = []
    for index, partition in enumerate(info.partitions):
        offline = controller.replica_offline(info.name, index, partition.leader)
        alive = partition.leader in image.brokers and not offline
        leader = partition.leader if alive else -1
        error = 0 if alive else (KafkaStorageError.errno if offline
                                 else LeaderNotAvailableError.errno)
        partitions.append({
            "error_code": error,
            "partition_index": index,
            "leader_id": leader,
            "leader_epoch": partition.leader_epoch,
            "replica_nodes": [partition.leader],
            "isr_nodes": [leader] if alive else [],
            "offline_replicas": [] if alive else [partition.leader],
        })
    return {"error_code": 0, "name": info.name, "is_internal": info.name in INTERNAL_TOPICS,
            "partitions": partitions}
