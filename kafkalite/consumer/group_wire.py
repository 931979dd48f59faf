"""The consumer protocol inside JoinGroup and SyncGroup: subscriptions and assignments as the
group's members exchange them, converted to and from what the assignors work with.

The AdminClient reads the same payloads when it describes a group, so they live apart from
the consumer's membership logic.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable, Mapping, Set
from typing import Any

from kafkalite.consumer.assignors import Assignment, Assignor, Subscription
from kafkalite.errors import KafkaError
from kafkalite.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafkalite.structs import TopicPartition

PROTOCOL_TYPE = "consumer"
_VERSION = struct.Struct(">h")


def join_protocols(assignors: Iterable[Assignor], topics: Set[str],
                   owned: Iterable[TopicPartition], generation: int) -> list[dict[str, Any]]:
    """JoinGroup's protocol list: one subscription per assignor, in preference order, each
    at the version its assignor reads, carrying what this member owned (cooperative/sticky)."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in owned:
        by_topic[tp.topic].append(tp.partition)
    protocols = []
    for assignor in assignors:
        subscription = assignor.metadata(topics)
        wire = ConsumerProtocolSubscription(
            topics=subscription.topics, user_data=subscription.user_data or b"",
            owned_partitions=sorted(by_topic.items()), generation_id=generation)
        protocols.append({"name": assignor.name, "metadata": wire.encode(assignor.version)})
    return protocols


def subscription_from_wire(member: Mapping[str, Any]) -> tuple[Subscription, int]:
    """A JoinGroup member entry as the assignor sees it, plus its subscription version."""
    metadata = member["metadata"]
    decoded = ConsumerProtocolSubscription.decode(metadata)
    (version,) = _VERSION.unpack_from(metadata, 0)
    owned = [TopicPartition(t, p) for t, ids in decoded.owned_partitions for p in ids]
    return Subscription(
        topics=list(decoded.topics), user_data=decoded.user_data, owned_partitions=owned,
        generation_id=decoded.generation_id, rack_id=decoded.rack_id,
        group_instance_id=member.get("group_instance_id"),
    ), version


def assignment_to_wire(assignment: Assignment, version: int) -> bytes:
    """ConsumerProtocolAssignment bytes, at a version the member's subscription showed it reads."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in assignment.partitions:
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"an assignor returned {tp!r}, not a TopicPartition")
        by_topic[tp.topic].append(tp.partition)
    partitions = [(topic, sorted(ids)) for topic, ids in sorted(by_topic.items())]
    return ConsumerProtocolAssignment(partitions, assignment.user_data).encode(
        max(0, min(version, 3)))


def assignment_from_wire(data: bytes) -> Assignment:
    decoded = ConsumerProtocolAssignment.decode(data)
    return Assignment([TopicPartition(t, p) for t, ids in decoded.partitions for p in ids],
                      decoded.user_data)


def chosen_assignor(assignors: Iterable[Assignor], name: str, group_id: str) -> Assignor:
    """The assignor of the protocol the coordinator chose for the group."""
    for assignor in assignors:
        if assignor.name == name:
            return assignor
    raise KafkaError(f"group {group_id!r} chose protocol {name!r}, which this consumer did "
                     "not offer")


def member_subscriptions(members: Iterable[Mapping[str, Any]]
                         ) -> tuple[dict[str, Subscription], dict[str, int]]:
    """JoinGroup's members (as the leader gets them): each member's subscription, and the
    version its assignment is to be written at."""
    subscriptions: dict[str, Subscription] = {}
    versions: dict[str, int] = {}
    for member in members:
        subscriptions[member["member_id"]], versions[member["member_id"]] = \
            subscription_from_wire(member)
    return subscriptions, versions


def sync_assignments(result: Mapping[str, Assignment], subscriptions: Iterable[str],
                     versions: Mapping[str, int]) -> list[dict[str, Any]]:
    """The leader's SyncGroup assignments: every member's (empty when the assignor gave it
    nothing), at its version."""
    return [{"member_id": member,
             "assignment": assignment_to_wire(result.get(member, Assignment([])),
                                              versions[member])}
            for member in subscriptions]
