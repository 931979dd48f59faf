"""What the coordinator answers; the request handlers turn these into wire responses."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition


@dataclass(frozen=True)
class JoinedMember:
    """One entry of the member list only the leader receives in its JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    error: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[JoinedMember] = field(default_factory=list)
    skip_assignment: bool = False
    """KIP-814: the leader gets the members but must not assign (JoinGroup v9+)."""


@dataclass(frozen=True)
class SyncResult:
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True)
class LeaveResult:
    """``error`` is group-wide; ``member_errors`` follows the order of the members asked to leave."""

    error: int
    member_errors: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class OffsetFetchResult:
    """``offsets`` maps each asked (or, for "all", each committed) partition; None = no commit."""

    error: int
    offsets: dict[TopicPartition, OffsetAndMetadata | None] = field(default_factory=dict)


@dataclass(frozen=True)
class OffsetDeleteResult:
    """``error`` is group-wide; otherwise ``partitions`` has a code for each asked partition."""

    error: int
    partitions: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    error: int
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription] = field(default_factory=list)


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
