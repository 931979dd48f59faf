"""KIP-848's online migration between a classic group and a consumer group, pure.

A member of the ``consumer`` protocol joining a classic group that has members converts it
into a consumer group (an **upgrade**): every classic member stays in the group at the
generation it had, keeps the partitions it owned (as its current and target assignment)
and goes on speaking JoinGroup, SyncGroup and Heartbeat; the group's assignor, not a
leader, decides its partitions from then on. When the last member of the ``consumer``
protocol leaves and classic members remain, the group turns back into a classic group (a
**downgrade**), which rebalances at once. ``group.consumer.migration.policy`` says which of
the two the broker does (Kafka's values and default).

The committed offsets never move: the classic coordinator keeps every group's offsets
whichever protocol runs its members.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

MIGRATION_POLICY_KEY = "group.consumer.migration.policy"
_MAX_ASSIGNMENT_VERSION = 3


class MigrationPolicy(Enum):
    """``group.consumer.migration.policy``: which conversions are allowed."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @property
    def upgrades(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrades(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


DEFAULT_MIGRATION_POLICY = MigrationPolicy.BIDIRECTIONAL
"""Kafka 4.0's default."""

Protocols = tuple[tuple[str, bytes], ...]
"""A classic member's (protocol name, metadata) pairs in its order of preference."""


@dataclass(frozen=True)
class ClassicMetadata:
    """What a consumer group keeps of a member that speaks the classic protocol
    (ConsumerGroupMemberMetadataValue's ClassicMemberMetadata)."""

    session_timeout_ms: int
    protocols: Protocols

    def subscription(self) -> ConsumerProtocolSubscription:
        """The member's subscription, read from its most preferred protocol's metadata
        (every protocol of a consumer carries the same topics)."""
        return ConsumerProtocolSubscription.decode(self.protocols[0][1])

    def encode_assignment(self, partitions: list[tuple[str, list[int]]]) -> bytes:
        """SyncGroup's assignment, at the version of the member's subscription."""
        try:
            (version,) = struct.unpack_from(">h", self.protocols[0][1], 0)
        except struct.error:
            version = 0
        return ConsumerProtocolAssignment(partitions).encode(
            min(max(version, 0), _MAX_ASSIGNMENT_VERSION))


@dataclass(frozen=True)
class ClassicMemberState:
    """One member of a classic group, as it moves between the protocols."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    classic: ClassicMetadata
    assignment: bytes
    """Its assignment in the consumer protocol's encoding (empty: none)."""


@dataclass(frozen=True)
class ClassicGroupState:
    """A classic group handed over to, or back from, the consumer-group coordinator."""

    group_id: str
    generation_id: int
    protocol_type: str | None
    members: tuple[ClassicMemberState, ...]


@dataclass(frozen=True)
class ClassicGroupsPort:
    """The classic coordinator, as the consumer groups see it."""

    snapshot: Callable[[str], ClassicGroupState | None]
    """The classic group of that id with its members (None: none, or it has no members)."""
    hand_over: Callable[[str], None]
    """Empties the classic group after an upgrade (its offsets stay); members waiting in a
    rebalance are told to rejoin."""
    take_back: Callable[[ClassicGroupState], None]
    """Installs a downgraded group and starts its rebalance."""


def owned_partitions(classic: ClassicMetadata) -> list[tuple[str, list[int]]]:
    """The partitions a rejoining classic member says it still owns (a cooperative
    client's; an eager one revoked everything before it rejoined)."""
    try:
        return classic.subscription().owned_partitions
    except ProtocolDecodeError:
        return []
