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
from kafkalite_server.group.modern_records import (
    CURRENT_ASSIGNMENT_FIELDS,
    MEMBER_FIELDS,
    TOPIC_PARTITIONS,
    ModernRecordTypes,
    record_type,
)

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

MEMBER_METADATA = record_type(10, "ShareGroupMemberMetadata", MEMBER_FIELDS, member=True)
GROUP_METADATA = record_type(11, "ShareGroupMetadata", (Field("epoch", INT32),), member=False)
TARGET_ASSIGNMENT_METADATA = record_type(12, "ShareGroupTargetAssignmentMetadata", (
    Field("assignment_epoch", INT32),
), member=False)
TARGET_ASSIGNMENT_MEMBER = record_type(13, "ShareGroupTargetAssignmentMember", (
    Field("topic_partitions", TOPIC_PARTITIONS),
), member=True)
CURRENT_MEMBER_ASSIGNMENT = record_type(14, "ShareGroupCurrentMemberAssignment",
                                        CURRENT_ASSIGNMENT_FIELDS, member=True)
STATE_PARTITION_METADATA = record_type(15, "ShareGroupStatePartitionMetadata", (
    Field("initialized_topics", Array(Struct(
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", Array(INT32)),
    ))),
    Field("deleting_topics", Array(Struct(
        Field("topic_id", UUID),
        Field("topic_name", STRING),
    ))),
), member=False)

GROUP_CONFIG_KEY_VERSION = 1000
"""Far from Kafka's record types (0-21 in Kafka 4.1), which may grow."""
GROUP_CONFIG = record_type(GROUP_CONFIG_KEY_VERSION, "GroupConfig", (
    Field("configs", Array(Struct(
        Field("name", STRING),
        Field("value", STRING),
    ))),
), member=False)

SHARE_RECORDS = ModernRecordTypes(GROUP_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA,
                                  TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT,
                                  others=(STATE_PARTITION_METADATA, GROUP_CONFIG))
