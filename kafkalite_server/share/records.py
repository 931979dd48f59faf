"""Share-group records in Kafka's formats, through the schema engine.

On ``__share_group_state`` (the share coordinator's topic), keyed by (group, topic id,
partition): ShareSnapshot (key version 0) holds a share partition's whole state, and
ShareUpdate (key version 1) the state batches one write changed, folded into the snapshot
before it on replay.

On ``__consumer_offsets`` (the group coordinator's topic), beside the classic groups'
records: ShareGroupMemberMetadata (10), ShareGroupMetadata (11),
ShareGroupTargetAssignmentMetadata (12), ShareGroupTargetAssignmentMember (13),
ShareGroupCurrentMemberAssignment (14) and ShareGroupStatePartitionMetadata (15). A null
value is a tombstone.

A group's configs (Kafka's GROUP config resource, ``share.auto.offset.reset`` ...) are kept
by its coordinator too, in a record of kafkalite's own: GroupConfig, key version
:data:`GROUP_CONFIG_KEY_VERSION` (Kafka keeps group configs in its KRaft metadata log,
which kafkalite does not have; Kafka's coordinators skip key versions they do not know).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.offsets_topic import decode_versioned, encode_versioned, read_version
from kafkalite.protocol.primitives import INT8, INT16, INT32, INT64, STRING, UINT16, UUID, Buffer
from kafkalite.protocol.schema import Array, Field, Message, Struct

# ------------------------------------------------------------------ __share_group_state

_STATE_KEY_FIELDS = (Field("group_id", STRING), Field("topic_id", UUID), Field("partition", INT32))
_STATE_BATCHES = Array(Struct(
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("delivery_state", INT8),
    Field("delivery_count", INT16),
))

SHARE_SNAPSHOT_KEY_VERSION = 0
SHARE_UPDATE_KEY_VERSION = 1
SHARE_SNAPSHOT_KEY = Message("ShareSnapshotKey", valid="0", flexible="none",
                             fields=_STATE_KEY_FIELDS)
SHARE_UPDATE_KEY = Message("ShareUpdateKey", valid="1", flexible="none",
                           fields=_STATE_KEY_FIELDS)
SHARE_SNAPSHOT_VALUE = Message("ShareSnapshotValue", valid="0", flexible="0+", fields=(
    Field("snapshot_epoch", UINT16),
    Field("state_epoch", INT32),
    Field("leader_epoch", INT32),
    Field("start_offset", INT64),
    Field("state_batches", _STATE_BATCHES),
))
SHARE_UPDATE_VALUE = Message("ShareUpdateValue", valid="0", flexible="0+", fields=(
    Field("snapshot_epoch", UINT16),
    Field("leader_epoch", INT32),
    Field("start_offset", INT64),
    Field("state_batches", _STATE_BATCHES),
))


@dataclass(frozen=True)
class StateKey:
    """Which share partition a share state record is about."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    def __str__(self) -> str:
        """Kafka's SharePartitionKey text: the share coordinator's placement key."""
        return f"{self.group_id}:{self.topic_id}:{self.partition}"


def share_state_key(key: StateKey, snapshot: bool) -> bytes:
    message, version = ((SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_KEY_VERSION) if snapshot
                        else (SHARE_UPDATE_KEY, SHARE_UPDATE_KEY_VERSION))
    return encode_versioned(message, version, {"group_id": key.group_id,
                                               "topic_id": key.topic_id,
                                               "partition": key.partition})


def share_state_value(snapshot: bool, body: Mapping[str, Any]) -> bytes:
    return encode_versioned(SHARE_SNAPSHOT_VALUE if snapshot else SHARE_UPDATE_VALUE, 0, body)


def decode_share_state_key(data: Buffer) -> tuple[bool, StateKey]:
    """(is a snapshot, the key); ProtocolDecodeError for a record of no known type."""
    version = read_version("__share_group_state key", data)
    if version == SHARE_SNAPSHOT_KEY_VERSION:
        body = decode_versioned(SHARE_SNAPSHOT_KEY, version, data)
    elif version == SHARE_UPDATE_KEY_VERSION:
        body = decode_versioned(SHARE_UPDATE_KEY, version, data)
    else:
        raise ProtocolDecodeError(f"__share_group_state key version {version} is unknown")
    return version == SHARE_SNAPSHOT_KEY_VERSION, StateKey(body["group_id"], body["topic_id"],
                                                           body["partition"])


def decode_share_state_value(snapshot: bool, data: Buffer) -> dict[str, Any]:
    message = SHARE_SNAPSHOT_VALUE if snapshot else SHARE_UPDATE_VALUE
    return decode_versioned(message, read_version(message.name, data), data)


# ------------------------------------------------------------------ __consumer_offsets

_GROUP_KEY = (Field("group_id", STRING),)
_MEMBER_KEY = (Field("group_id", STRING), Field("member_id", STRING))
_TOPIC_PARTITIONS = Array(Struct(Field("topic_id", UUID), Field("partitions", Array(INT32))))


@dataclass(frozen=True)
class GroupRecordType:
    """One kind of share-group record on ``__consumer_offsets``: its key version, key and
    value schemas."""

    key_version: int
    key: Message
    value: Message


MEMBER_METADATA = GroupRecordType(
    10,
    Message("ShareGroupMemberMetadataKey", valid="10", flexible="none", fields=_MEMBER_KEY),
    Message("ShareGroupMemberMetadataValue", valid="0", flexible="0+", fields=(
        Field("rack_id", STRING, nullable="0+"),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", Array(STRING)),
    )))
GROUP_METADATA = GroupRecordType(
    11,
    Message("ShareGroupMetadataKey", valid="11", flexible="none", fields=_GROUP_KEY),
    Message("ShareGroupMetadataValue", valid="0", flexible="0+", fields=(
        Field("epoch", INT32),
    )))
TARGET_ASSIGNMENT_METADATA = GroupRecordType(
    12,
    Message("ShareGroupTargetAssignmentMetadataKey", valid="12", flexible="none",
            fields=_GROUP_KEY),
    Message("ShareGroupTargetAssignmentMetadataValue", valid="0", flexible="0+", fields=(
        Field("assignment_epoch", INT32),
    )))
TARGET_ASSIGNMENT_MEMBER = GroupRecordType(
    13,
    Message("ShareGroupTargetAssignmentMemberKey", valid="13", flexible="none",
            fields=_MEMBER_KEY),
    Message("ShareGroupTargetAssignmentMemberValue", valid="0", flexible="0+", fields=(
        Field("topic_partitions", _TOPIC_PARTITIONS),
    )))
CURRENT_MEMBER_ASSIGNMENT = GroupRecordType(
    14,
    Message("ShareGroupCurrentMemberAssignmentKey", valid="14", flexible="none",
            fields=_MEMBER_KEY),
    Message("ShareGroupCurrentMemberAssignmentValue", valid="0", flexible="0+", fields=(
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("assigned_partitions", _TOPIC_PARTITIONS),
    )))
STATE_PARTITION_METADATA = GroupRecordType(
    15,
    Message("ShareGroupStatePartitionMetadataKey", valid="15", flexible="none",
            fields=_GROUP_KEY),
    Message("ShareGroupStatePartitionMetadataValue", valid="0", flexible="0+", fields=(
        Field("initialized_topics", Array(Struct(
            Field("topic_id", UUID),
            Field("topic_name", STRING),
            Field("partitions", Array(INT32)),
        ))),
        Field("deleting_topics", Array(Struct(
            Field("topic_id", UUID),
            Field("topic_name", STRING),
        ))),
    )))

GROUP_CONFIG_KEY_VERSION = 1000
"""Far from Kafka's record types (0-21 in Kafka 4.1), which may grow."""
GROUP_CONFIG = GroupRecordType(
    GROUP_CONFIG_KEY_VERSION,
    Message("GroupConfigKey", valid=str(GROUP_CONFIG_KEY_VERSION), flexible="none",
            fields=_GROUP_KEY),
    Message("GroupConfigValue", valid="0", flexible="0+", fields=(
        Field("configs", Array(Struct(
            Field("name", STRING),
            Field("value", STRING),
        ))),
    )))

GROUP_RECORD_TYPES: dict[int, GroupRecordType] = {
    kind.key_version: kind
    for kind in (MEMBER_METADATA, GROUP_METADATA, TARGET_ASSIGNMENT_METADATA,
                 TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, STATE_PARTITION_METADATA,
                 GROUP_CONFIG)
}


def group_record(kind: GroupRecordType, key: Mapping[str, Any],
                 value: Mapping[str, Any] | None) -> tuple[bytes, bytes | None]:
    """A share-group record (a tombstone when ``value`` is None)."""
    return (encode_versioned(kind.key, kind.key_version, key),
            None if value is None else encode_versioned(kind.value, 0, value))


def decode_group_record(key: Buffer, value: Buffer | None
                        ) -> tuple[GroupRecordType, dict[str, Any], dict[str, Any] | None] | None:
    """The record's type, key and value (None: a tombstone), or None when the key is not
    a share group's (classic and consumer groups share the topic)."""
    kind = GROUP_RECORD_TYPES.get(read_version("__consumer_offsets key", key))
    if kind is None:
        return None
    body = decode_versioned(kind.key, kind.key_version, key)
    if value is None:
        return kind, body, None
    return kind, body, decode_versioned(kind.value, read_version(kind.value.name, value), value)
