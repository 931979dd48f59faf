"""What the records of the modern group protocols (KIP-848 consumer groups and KIP-932 share
groups) have in common on ``__consumer_offsets``.

Both protocols write the same shapes of record, each kind under its own key version: a
group-keyed metadata record (the group epoch), a member-keyed member metadata record, a
target assignment (its epoch, and one record a member) and a member's current assignment.
The keys are the group id, or the group id and member id; an assignment is a list of
(topic id, partitions); every value is version 0 and flexible; a null value is a
tombstone. One definition of each shape serves both protocols, so that the two cannot drift.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.protocol.offsets_topic import decode_versioned, encode_versioned, read_version
from kafkalite.protocol.primitives import INT8, INT32, STRING, UUID, Buffer
from kafkalite.protocol.schema import Array, Field, Message, Struct

KeyValue = tuple[bytes, bytes | None]
"""A record to append: its key and value (None: a tombstone)."""

GROUP_KEY = (Field("group_id", STRING),)
MEMBER_KEY = (Field("group_id", STRING), Field("member_id", STRING))
TOPIC_PARTITIONS = Array(Struct(Field("topic_id", UUID), Field("partitions", Array(INT32))))
"""An assignment as the records hold it."""
MEMBER_FIELDS = (
    Field("rack_id", STRING, nullable="0+"),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", Array(STRING)),
)
"""The member metadata value's fields both protocols write, in their order."""
CURRENT_ASSIGNMENT_FIELDS = (
    Field("member_epoch", INT32),
    Field("previous_member_epoch", INT32),
    Field("state", INT8),
    Field("assigned_partitions", TOPIC_PARTITIONS),
)
"""The current member assignment value's fields both protocols write, first."""


@dataclass(frozen=True)
class GroupRecordType:
    """One kind of group record on ``__consumer_offsets``: its key version, key and value
    schemas."""

    key_version: int
    key: Message
    value: Message


@dataclass(frozen=True)
class ModernRecordTypes:
    """One protocol's kinds of group record."""

    group_metadata: GroupRecordType
    member_metadata: GroupRecordType
    target_assignment_metadata: GroupRecordType
    target_assignment_member: GroupRecordType
    current_member_assignment: GroupRecordType
    others: tuple[GroupRecordType, ...] = ()
    """The protocol's own kinds besides the shared shapes."""

    @property
    def member_kinds(self) -> tuple[GroupRecordType, ...]:
        """A member's records, in the order its tombstones are written when it leaves
        (Kafka's)."""
        return (self.current_member_assignment, self.target_assignment_member,
                self.member_metadata)

    @property
    def by_key_version(self) -> dict[int, GroupRecordType]:
        return {kind.key_version: kind for kind in (
            self.group_metadata, self.member_metadata, self.target_assignment_metadata,
            self.target_assignment_member, self.current_member_assignment, *self.others)}


def record_type(key_version: int, name: str, value_fields: tuple[Field, ...], *,
                member: bool) -> GroupRecordType:
    """The kind ``name`` (Kafka's record name, without Key/Value), keyed by group, or by
    group and member when ``member``."""
    return GroupRecordType(
        key_version,
        Message(f"{name}Key", valid=str(key_version), flexible="none",
                fields=MEMBER_KEY if member else GROUP_KEY),
        Message(f"{name}Value", valid="0", flexible="0+", fields=value_fields))


def group_record(kind: GroupRecordType, key: Mapping[str, Any],
                 value: Mapping[str, Any] | None) -> KeyValue:
    """A group record (a tombstone when ``value`` is None)."""
    return (encode_versioned(kind.key, kind.key_version, key),
            None if value is None else encode_versioned(kind.value, 0, value))


DecodedRecord = tuple[GroupRecordType, dict[str, Any], dict[str, Any] | None]
"""A record's type, key and value (None: a tombstone)."""


def decode_group_record(kinds: Mapping[int, GroupRecordType], key: Buffer,
                        value: Buffer | None) -> DecodedRecord | None:
    """The record, or None when its key version is none of ``kinds`` (the groups of every
    protocol share the topic)."""
    kind = kinds.get(read_version("__consumer_offsets key", key))
    if kind is None:
        return None
    body = decode_versioned(kind.key, kind.key_version, key)
    if value is None:
        return kind, body, None
    return kind, body, decode_versioned(kind.value, read_version(kind.value.name, value), value)


def wire_assignment(assignment: Mapping[uuid.UUID, Any]) -> list[dict[str, Any]]:
    """An assignment (topic id -> partitions) as :data:`TOPIC_PARTITIONS` holds it."""
    return [{"topic_id": topic_id, "partitions": sorted(partitions)}
            for topic_id, partitions in sorted(assignment.items())]
