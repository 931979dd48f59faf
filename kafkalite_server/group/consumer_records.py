"""Consumer-group (KIP-848) records on ``__consumer_offsets`` in Kafka 4's formats.

Key versions as Kafka's: ConsumerGroupMetadata (3), ConsumerGroupPartitionMetadata (4),
ConsumerGroupMemberMetadata (5), ConsumerGroupTargetAssignmentMetadata (6),
ConsumerGroupTargetAssignmentMember (7), ConsumerGroupCurrentMemberAssignment (8); every
value is version 0. A null value is a tombstone. The offsets a consumer group commits are
the classic OffsetCommit records (key version 1), kept by the classic coordinator.

ConsumerGroupMemberMetadataValue's tagged ``ClassicMemberMetadata`` (a classic member in a
consumer group) is never written: kafkalite does not mix protocols in one group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalite.protocol.offsets_topic import decode_versioned, encode_versioned, read_version
from kafkalite.protocol.primitives import INT8, INT32, STRING, UUID, Buffer
from kafkalite.protocol.schema import Array, Field, Message, Struct
from kafkalite_server.share.records import GroupRecordType

_GROUP_KEY = (Field("group_id", STRING),)
_MEMBER_KEY = (Field("group_id", STRING), Field("member_id", STRING))
_TOPIC_PARTITIONS = Array(Struct(Field("topic_id", UUID), Field("partitions", Array(INT32))))


def _kind(key_version: int, name: str, value_fields: tuple[Field, ...], *,
          member: bool) -> GroupRecordType:
    return GroupRecordType(
        key_version,
        Message(f"{name}Key", valid=str(key_version), flexible="none",
                fields=_MEMBER_KEY if member else _GROUP_KEY),
        Message(f"{name}Value", valid="0", flexible="0+", fields=value_fields))


GROUP_METADATA = _kind(3, "ConsumerGroupMetadata", (Field("epoch", INT32),), member=False)
PARTITION_METADATA = _kind(4, "ConsumerGroupPartitionMetadata", (
    Field("topics", Array(Struct(
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("num_partitions", INT32),
        Field("partition_metadata", Array(Struct(
            Field("partition", INT32),
            Field("racks", Array(STRING)),
        ))),
    ))),
), member=False)
MEMBER_METADATA = _kind(5, "ConsumerGroupMemberMetadata", (
    Field("instance_id", STRING, nullable="0+"),
    Field("rack_id", STRING, nullable="0+"),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", Array(STRING)),
    Field("subscribed_topic_regex", STRING, nullable="0+"),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("server_assignor", STRING, nullable="0+"),
), member=True)
TARGET_ASSIGNMENT_METADATA = _kind(6, "ConsumerGroupTargetAssignmentMetadata", (
    Field("assignment_epoch", INT32),
), member=False)
TARGET_ASSIGNMENT_MEMBER = _kind(7, "ConsumerGroupTargetAssignmentMember", (
    Field("topic_partitions", _TOPIC_PARTITIONS),
), member=True)
CURRENT_MEMBER_ASSIGNMENT = _kind(8, "ConsumerGroupCurrentMemberAssignment", (
    Field("member_epoch", INT32),
    Field("previous_member_epoch", INT32),
    Field("state", INT8),
    Field("assigned_partitions", _TOPIC_PARTITIONS),
    Field("partitions_pending_revocation", _TOPIC_PARTITIONS),
), member=True)

RECORD_TYPES: dict[int, GroupRecordType] = {kind.key_version: kind for kind in (
    GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA,
    TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)}
MEMBER_RECORD_TYPES = (CURRENT_MEMBER_ASSIGNMENT, TARGET_ASSIGNMENT_MEMBER, MEMBER_METADATA)
"""A member's records, in the order its tombstones are written when it leaves (Kafka's)."""

KeyValue = tuple[bytes, bytes | None]


def consumer_record(kind: GroupRecordType, key: Mapping[str, Any],
                    value: Mapping[str, Any] | None) -> KeyValue:
    """A consumer-group record (a tombstone when ``value`` is None)."""
    return (encode_versioned(kind.key, kind.key_version, key),
            None if value is None else encode_versioned(kind.value, 0, value))


def decode_consumer_record(key: Buffer, value: Buffer | None
                           ) -> tuple[GroupRecordType, dict[str, Any], dict[str, Any] | None] | None:
    """The record's type, key and value (None: a tombstone), or None when the key is no
    consumer group's (classic and share groups share the topic)."""
    kind = RECORD_TYPES.get(read_version("__consumer_offsets key", key))
    if kind is None:
        return None
    body = decode_versioned(kind.key, kind.key_version, key)
    if value is None:
        return kind, body, None
    return kind, body, decode_versioned(kind.value, read_version(kind.value.name, value), value)
