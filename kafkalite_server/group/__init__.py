"""The broker's group coordinator (classic protocol) and its offsets store."""

from kafkalite_server.group.config import OFFSETS_TOPIC, GroupCoordinatorConfig
from kafkalite_server.group.coordinator import GroupCoordinator, JoinRequest, LeavingMember
from kafkalite_server.group.offsets import OffsetAndMetadata, OffsetCommitEntry, TopicPartition
from kafkalite_server.group.state import GroupState

__all__ = [
    "OFFSETS_TOPIC",
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "GroupState",
    "JoinRequest",
    "LeavingMember",
    "OffsetAndMetadata",
    "OffsetCommitEntry",
    "TopicPartition",
]
