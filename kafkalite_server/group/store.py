"""How the coordinator persists groups and offsets, and what it loads back.

The coordinator only sees this interface; :mod:`kafkalite_server.group.log_store` implements
it on the ``__consumer_offsets`` log and unit tests use an in-memory twin. Writes are
synchronous and complete before the coordinator answers, so an acknowledged commit is on
disk (in the page cache) even if the broker is killed right after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition


@dataclass(frozen=True)
class MemberRecord:
    """A member as GroupMetadataValue stores it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataRecord:
    """A group's state after a rebalance, as GroupMetadataValue stores it."""

    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    state_timestamp_ms: int
    members: list[MemberRecord] = field(default_factory=list)


@dataclass
class LoadedGroup:
    """What replaying an offsets partition yields for one group."""

    group_id: str
    metadata: GroupMetadataRecord | None = None
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)


class GroupStore(Protocol):
    """Durable storage for one coordinator's groups; raise a KafkaError if a write fails."""

    def store_group(self, partition: int, group_id: str, record: GroupMetadataRecord) -> None: ...

    def store_offsets(
        self, partition: int, group_id: str, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> None: ...

    def delete_offsets(
        self, partition: int, group_id: str, offsets: list[TopicPartition]
    ) -> None: ...

    def delete_group(
        self, partition: int, group_id: str, offsets: list[TopicPartition]
    ) -> None: ...
