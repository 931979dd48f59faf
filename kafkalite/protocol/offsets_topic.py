"""Record key/value formats of the ``__consumer_offsets`` topic, through the same engine.

A key is an int16 key version (the record type) and the key struct; a value is an int16
value version and the value struct; a null value is a tombstone (handled by the caller).
Key versions 0/1 are offset commits, 2 is group metadata; other key versions (KIP-848 and
share groups) are skipped by readers, so :func:`decode_offsets_topic_key` returns None.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Literal

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.primitives import BYTES, INT32, INT64, STRING, Buffer
from kafkalite.protocol.schema import Array, Field, Message, Struct

_VERSION = struct.Struct(">h")

OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey", valid="0-1", flexible="none", fields=(
        Field("group", STRING),
        Field("topic", STRING),
        Field("partition", INT32),
    ),
)

OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue", valid="0-4", flexible="4+", fields=(
        Field("offset", INT64),
        Field("leader_epoch", INT32, "3+", default=-1),
        Field("metadata", STRING),
        Field("commit_timestamp", INT64),
        Field("expire_timestamp", INT64, "1", default=-1),
    ),
)

GROUP_METADATA_KEY = Message(
    "GroupMetadataKey", valid="2", flexible="none", fields=(
        Field("group", STRING),
    ),
)

GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue", valid="0-4", flexible="4+", fields=(
        Field("protocol_type", STRING),
        Field("generation", INT32),
        Field("protocol", STRING, nullable="0+"),
        Field("leader", STRING, nullable="0+"),
        Field("current_state_timestamp", INT64, "2+", default=-1),
        Field("members", Array(Struct(
            Field("member_id", STRING),
            Field("group_instance_id", STRING, "3+", nullable="3+"),
            Field("client_id", STRING),
            Field("client_host", STRING),
            Field("rebalance_timeout", INT32, "1+", default=-1),
            Field("session_timeout", INT32),
            Field("subscription", BYTES),
            Field("assignment", BYTES),
        ))),
    ),
)

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2


def encode_versioned(message: Message, version: int, body: Mapping[str, Any]) -> bytes:
    """A record key or value: its int16 version, then the body in that version."""
    if not message.defines(version):
        raise ValueError(f"{message.name} has no version {version}")
    return _VERSION.pack(version) + message.encode(body, version)


def read_version(what: str, data: Buffer) -> int:
    """The int16 version a record key or value starts with."""
    try:
        return int(_VERSION.unpack_from(data, 0)[0])
    except struct.error:
        raise ProtocolDecodeError(f"{what}: {len(data)} bytes, no version") from None


def decode_versioned(message: Message, version: int, data: Buffer) -> dict[str, Any]:
    """The body after the version, which must be the whole rest of ``data``."""
    if not message.defines(version):
        raise ProtocolDecodeError(f"{message.name}: unknown version {version}")
    body, end = message.decode(data, 2, version)
    if end != len(data):
        raise ProtocolDecodeError(f"{message.name} v{version}: {len(data) - end} trailing bytes")
    return body


def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return encode_versioned(
        OFFSET_COMMIT_KEY,
        OFFSET_COMMIT_KEY_VERSION,
        {"group": group, "topic": topic, "partition": partition},
    )


def encode_offset_commit_value(value: Mapping[str, Any], version: int = 3) -> bytes:
    """Kafka writes v3, or v1 when the commit carried an explicit expire timestamp."""
    return encode_versioned(OFFSET_COMMIT_VALUE, version, value)


def encode_group_metadata_key(group: str) -> bytes:
    return encode_versioned(GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION, {"group": group})


def encode_group_metadata_value(value: Mapping[str, Any], version: int = 3) -> bytes:
    return encode_versioned(GROUP_METADATA_VALUE, version, value)


def decode_offsets_topic_key(
    data: Buffer,
) -> tuple[Literal["offset"], dict[str, Any]] | tuple[Literal["group"], dict[str, Any]] | None:
    """("offset", key) or ("group", key), or None for key versions this reader skips."""
    version = read_version("__consumer_offsets key", data)
    if version in (0, 1):
        return "offset", decode_versioned(OFFSET_COMMIT_KEY, version, data)
    if version == GROUP_METADATA_KEY_VERSION:
        return "group", decode_versioned(GROUP_METADATA_KEY, version, data)
    return None


def decode_offset_commit_value(data: Buffer) -> dict[str, Any]:
    version = read_version("OffsetCommitValue", data)
    return decode_versioned(OFFSET_COMMIT_VALUE, version, data)


def decode_group_metadata_value(data: Buffer) -> dict[str, Any]:
    version = read_version("GroupMetadataValue", data)
    return decode_versioned(GROUP_METADATA_VALUE, version, data)
