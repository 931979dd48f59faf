"""Consumer-group (KIP-848) records on ``__consumer_offsets`` in Kafka 4's formats.

Key versions as Kafka's: ConsumerGroupMetadata (3), ConsumerGroupPartitionMetadata (4),
ConsumerGroupMemberMetadata (5), ConsumerGroupTargetAssignmentMetadata (6),
ConsumerGroupTargetAssignmentMember (7), ConsumerGroupCurrentMemberAssignment (8); every
value is version 0. A null value is a tombstone. The offsets a consumer group commits are
the classic OffsetCommit records (key version 1), kept by the classic coordinator.

ConsumerGroupMemberMetadataValue's tagged ``ClassicMemberMetadata`` (tag 0) is set for a
member that speaks the classic protocol in a group upgraded from a classic one
(:mod:`.consumer_migration`): its session timeout and its JoinGroup protocols, so that a
coordinator failover goes on answering its JoinGroup, SyncGroup and Heartbeat.
"""

from __future__ import annotations

from kafkalite.protocol.primitives import BYTES, INT32, STRING, UUID
from kafkalite.protocol.schema import Array, Field, Struct
from kafkalite_server.group.modern_records import (
    CURRENT_ASSIGNMENT_FIELDS,
    MEMBER_FIELDS,
    TOPIC_PARTITIONS,
    ModernRecordTypes,
)
from kafkalite_server.group.modern_records import record_type as _kind

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
    *MEMBER_FIELDS,
    Field("subscribed_topic_regex", STRING, nullable="0+"),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("server_assignor", STRING, nullable="0+"),
    Field("classic_member_metadata", Struct(
        Field("session_timeout_ms", INT32),
        Field("supported_protocols", Array(Struct(
            Field("name", STRING),
            Field("metadata", BYTES),
        ))),
    ), nullable="0+", tag=0, tagged="0+", default=None),
), member=True)
TARGET_ASSIGNMENT_METADATA = _kind(6, "ConsumerGroupTargetAssignmentMetadata", (
    Field("assignment_epoch", INT32),
), member=False)
TARGET_ASSIGNMENT_MEMBER = _kind(7, "ConsumerGroupTargetAssignmentMember", (
    Field("topic_partitions", TOPIC_PARTITIONS),
), member=True)
CURRENT_MEMBER_ASSIGNMENT = _kind(8, "ConsumerGroupCurrentMemberAssignment", (
    *CURRENT_ASSIGNMENT_FIELDS,
    Field("partitions_pending_revocation", TOPIC_PARTITIONS),
), member=True)

CONSUMER_RECORDS = ModernRecordTypes(GROUP_METADATA, MEMBER_METADATA,
                                     TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER,
                                     CURRENT_MEMBER_ASSIGNMENT, others=(PARTITION_METADATA,))
