"""Offset APIs: ListOffsets (2), OffsetCommit (8), OffsetFetch (9), OffsetForLeaderEpoch (23).

ListOffsets v8 and v9 add no field: they allow the timestamps -4 (the earliest offset kept
locally) and -5 (the latest offset in tiered storage) of KIP-1005. v10 (Kafka 4.0's KIP-1075
timeout) is not served: Kafka 3.9 stops at v9.
"""

from kafkalite.protocol.primitives import BOOL, INT8, INT16, INT32, INT64, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

LIST_OFFSETS_REQUEST = Message(
    "ListOffsetsRequest", valid="0-9", flexible="6+", fields=(
        Field("replica_id", INT32, default=-1),
        Field("isolation_level", INT8, "2+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("current_leader_epoch", INT32, "4+", default=-1),
                Field("timestamp", INT64),
                Field("max_num_offsets", INT32, "0", default=1),
            ))),
        ))),
    ),
)

LIST_OFFSETS_RESPONSE = Message(
    "ListOffsetsResponse", valid="0-9", flexible="6+", fields=(
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("old_style_offsets", Array(INT64), "0"),
                Field("timestamp", INT64, "1+", default=-1),
                Field("offset", INT64, "1+", default=-1),
                Field("leader_epoch", INT32, "4+", default=-1),
            ))),
        ))),
    ),
)

OFFSET_COMMIT_REQUEST = Message(
    "OffsetCommitRequest", valid="2-9", flexible="8+", fields=(
        Field("group_id", STRING),
        Field("generation_id_or_member_epoch", INT32, default=-1),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "7+", nullable="7+"),
        Field("retention_time_ms", INT64, "2-4", default=-1),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("committed_offset", INT64),
                Field("committed_leader_epoch", INT32, "6+", default=-1),
                Field("committed_metadata", STRING, nullable="0+"),
            ))),
        ))),
    ),
)

OFFSET_COMMIT_RESPONSE = Message(
    "OffsetCommitResponse", valid="2-9", flexible="8+", fields=(
        Field("throttle_time_ms", INT32, "3+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ))),
        ))),
    ),
)

_OFFSET_FETCH_TOPICS = Array(Struct(
    Field("name", STRING),
    Field("partition_indexes", Array(INT32)),
))

OFFSET_FETCH_REQUEST = Message(
    "OffsetFetchRequest", valid="1-9", flexible="6+", fields=(
        Field("group_id", STRING, "0-7"),
        Field("topics", _OFFSET_FETCH_TOPICS, "0-7", nullable="2-7"),
        Field("groups", Array(Struct(  # v8+: several groups at once
            Field("group_id", STRING),
            Field("member_id", STRING, "9+", nullable="9+", default=None),
            Field("member_epoch", INT32, "9+", default=-1),
            Field("topics", _OFFSET_FETCH_TOPICS, nullable="8+"),
        )), "8+"),
        Field("require_stable", BOOL, "7+", default=False),
    ),
)

_OFFSET_FETCH_PARTITIONS = Array(Struct(
    Field("partition_index", INT32),
    Field("committed_offset", INT64, default=-1),
    Field("committed_leader_epoch", INT32, "5+", default=-1),
    Field("metadata", STRING, nullable="0+"),
    Field("error_code", INT16),
))

OFFSET_FETCH_RESPONSE = Message(
    "OffsetFetchResponse", valid="1-9", flexible="6+", fields=(
        Field("throttle_time_ms", INT32, "3+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", _OFFSET_FETCH_PARTITIONS),
        )), "0-7"),
        Field("error_code", INT16, "2-7"),
        Field("groups", Array(Struct(
            Field("group_id", STRING),
            Field("topics", Array(Struct(
                Field("name", STRING),
                Field("partitions", _OFFSET_FETCH_PARTITIONS),
            ))),
            Field("error_code", INT16, default=0),
        )), "8+"),
    ),
)

OFFSET_FOR_LEADER_EPOCH_REQUEST = Message(
    "OffsetForLeaderEpochRequest", valid="2-4", flexible="4+", fields=(
        Field("replica_id", INT32, "3+", default=-2),
        Field("topics", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(Struct(
                Field("partition", INT32),
                Field("current_leader_epoch", INT32, "2+", default=-1),
                Field("leader_epoch", INT32),
            ))),
        ))),
    ),
)

OFFSET_FOR_LEADER_EPOCH_RESPONSE = Message(
    "OffsetForLeaderEpochResponse", valid="2-4", flexible="4+", fields=(
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(Struct(
                Field("error_code", INT16),
                Field("partition", INT32),
                Field("leader_epoch", INT32, "1+", default=-1),
                Field("end_offset", INT64, default=-1),
            ))),
        ))),
    ),
)
