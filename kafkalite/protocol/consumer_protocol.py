"""The "consumer" group protocol payloads carried as opaque bytes by JoinGroup (member
subscriptions) and SyncGroup (assignments).

Both are non-flexible structs behind an int16 version. Readers accept versions above the
ones they know by reading the known fields and ignoring what follows, as Kafka's own
reader does; a zero-length assignment (what the coordinator fills in for a member the
leader left out) reads as an empty assignment.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.primitives import BYTES, INT32, STRING, Buffer
from kafkalite.protocol.schema import Array, Field, Message, Struct

_VERSION = struct.Struct(">h")
_MAX_KNOWN_VERSION = 3

_TOPIC_PARTITIONS = Struct(
    Field("topic", STRING),
    Field("partitions", Array(INT32)),
)

SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription", valid="0-3", flexible="none", fields=(
        Field("topics", Array(STRING)),
        Field("user_data", BYTES, nullable="0+"),
        Field("owned_partitions", Array(_TOPIC_PARTITIONS), "1+"),
        Field("generation_id", INT32, "2+", default=-1),
        Field("rack_id", STRING, "3+", nullable="3+"),
    ),
)

ASSIGNMENT = Message(
    "ConsumerProtocolAssignment", valid="0-3", flexible="none", fields=(
        Field("assigned_partitions", Array(_TOPIC_PARTITIONS)),
        Field("user_data", BYTES, nullable="0+"),
    ),
)

TopicPartitions = list[tuple[str, list[int]]]


def _encode(message: Message, version: int, body: dict[str, object]) -> bytes:
    if not message.defines(version):
        raise ValueError(f"{message.name} version must be 0..{_MAX_KNOWN_VERSION}, not {version}")
    return _VERSION.pack(version) + message.encode(body, version)


def _decode(message: Message, data: Buffer) -> tuple[int, dict[str, object]]:
    """Returns (version as written, body read with the highest schema version we know)."""
    try:
        (version,) = _VERSION.unpack_from(data, 0)
    except struct.error:
        raise ProtocolDecodeError(f"{message.name}: {len(data)} bytes, no version") from None
    if version < 0:
        raise ProtocolDecodeError(f"{message.name}: negative version {version}")
    body, _ = message.decode(data, 2, min(version, _MAX_KNOWN_VERSION))
    return version, body


def _to_wire(partitions: TopicPartitions) -> list[dict[str, object]]:
    return [{"topic": topic, "partitions": list(ids)} for topic, ids in partitions]


def _from_wire(items: object) -> TopicPartitions:
    assert isinstance(items, list)
    return [(item["topic"], item["partitions"]) for item in items]


@dataclass
class ConsumerProtocolSubscription:
    """A member's JoinGroup metadata: the topics it wants and what it owns already."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None

    def encode(self, version: int) -> bytes:
        return _encode(
            SUBSCRIPTION,
            version,
            {
                "topics": self.topics,
                "user_data": self.user_data,
                "owned_partitions": _to_wire(self.owned_partitions),
                "generation_id": self.generation_id,
                "rack_id": self.rack_id,
            },
        )

    @classmethod
    def decode(cls, data: Buffer) -> ConsumerProtocolSubscription:
        _, body = _decode(SUBSCRIPTION, data)
        return cls(
            topics=body["topics"],  # type: ignore[arg-type]
            user_data=body["user_data"],  # type: ignore[arg-type]
            owned_partitions=_from_wire(body["owned_partitions"]),
            generation_id=body["generation_id"],  # type: ignore[arg-type]
            rack_id=body["rack_id"],  # type: ignore[arg-type]
        )


@dataclass
class ConsumerProtocolAssignment:
    """The partitions the group leader assigned to one member (SyncGroup bytes)."""

    partitions: TopicPartitions
    user_data: bytes | None = None

    def encode(self, version: int) -> bytes:
        return _encode(
            ASSIGNMENT,
            version,
            {"assigned_partitions": _to_wire(self.partitions), "user_data": self.user_data},
        )

    @classmethod
    def decode(cls, data: Buffer) -> ConsumerProtocolAssignment:
        if len(data) == 0:
            return cls([], None)
        _, body = _decode(ASSIGNMENT, data)
        return cls(_from_wire(body["assigned_partitions"]), body["user_data"])  # type: ignore[arg-type]
