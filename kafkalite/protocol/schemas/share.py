"""Share groups (KIP-932, "queues for Kafka"): the client APIs ShareGroupHeartbeat (76),
ShareGroupDescribe (77), ShareFetch (78), ShareAcknowledge (79); the admin APIs
DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92);
and the APIs a partition's leader speaks to the share coordinator that keeps the share
state: InitializeShareGroupState (83), ReadShareGroupState (84), WriteShareGroupState (85),
DeleteShareGroupState (86), ReadShareGroupStateSummary (87).

Versions are those Kafka 4.1 made generally available and librdkafka 2.16 sends:
ShareGroupHeartbeat, ShareFetch and ShareAcknowledge v1 only (their v0 was Kafka 4.0's
early access, never enabled by default); ShareFetch v1 has ``max_records`` and
``batch_size`` instead of a per-partition byte limit, and answers the acquisition lock's
duration.

The acknowledge types of an acknowledgement batch: 0 gap (no record at the offset), 1
accept, 2 release, 3 reject; one type for the whole range, or one per offset.
"""

from kafkalite.protocol.primitives import (
    INT8,
    INT16,
    INT32,
    INT32_MAX,
    INT64,
    RECORDS,
    STRING,
    UUID,
)
from kafkalite.protocol.schema import Array, Field, Message, Struct
from kafkalite.protocol.schemas.modern_groups import (
    DESCRIBE_REQUEST_FIELDS,
    DESCRIBED_ASSIGNMENT,
    HEARTBEAT_RESPONSE_FIELDS,
    TOPIC_PARTITIONS,
    describe_response_fields,
)

SHARE_GROUP_HEARTBEAT_REQUEST = Message(
    "ShareGroupHeartbeatRequest", valid="1", flexible="0+", fields=(
        Field("group_id", STRING),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("rack_id", STRING, nullable="0+"),
        Field("subscribed_topic_names", Array(STRING), nullable="0+"),
    ),
)

SHARE_GROUP_HEARTBEAT_RESPONSE = Message(
    "ShareGroupHeartbeatResponse", valid="1", flexible="0+", fields=HEARTBEAT_RESPONSE_FIELDS)

SHARE_GROUP_DESCRIBE_REQUEST = Message(
    "ShareGroupDescribeRequest", valid="0-1", flexible="0+", fields=DESCRIBE_REQUEST_FIELDS)

SHARE_GROUP_DESCRIBE_RESPONSE = Message(
    "ShareGroupDescribeResponse", valid="0-1", flexible="0+",
    fields=describe_response_fields(
        Field("member_id", STRING),
        Field("rack_id", STRING, nullable="0+"),
        Field("member_epoch", INT32),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", Array(STRING)),
        Field("assignment", DESCRIBED_ASSIGNMENT),
    ))

_ACKNOWLEDGEMENT_BATCHES = Array(Struct(
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("acknowledge_types", Array(INT8)),
))

_CURRENT_LEADER = Struct(
    Field("leader_id", INT32, default=-1),
    Field("leader_epoch", INT32, default=-1),
)

_NODE_ENDPOINTS = Array(Struct(
    Field("node_id", INT32),
    Field("host", STRING),
    Field("port", INT32),
    Field("rack", STRING, nullable="0+"),
))

SHARE_FETCH_REQUEST = Message(
    "ShareFetchRequest", valid="1", flexible="0+", fields=(
        Field("group_id", STRING, nullable="0+"),
        Field("member_id", STRING, nullable="0+"),
        Field("share_session_epoch", INT32),
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, default=INT32_MAX),
        Field("max_records", INT32),
        Field("batch_size", INT32),
        Field("topics", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("acknowledgement_batches", _ACKNOWLEDGEMENT_BATCHES),
            ))),
        ))),
        Field("forgotten_topics_data", Array(TOPIC_PARTITIONS)),
    ),
)

SHARE_FETCH_RESPONSE = Message(
    "ShareFetchResponse", valid="1", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("acquisition_lock_timeout_ms", INT32),
        Field("responses", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
                Field("acknowledge_error_code", INT16),
                Field("acknowledge_error_message", STRING, nullable="0+"),
                Field("current_leader", _CURRENT_LEADER),
                Field("records", RECORDS, nullable="0+"),
                Field("acquired_records", Array(Struct(
                    Field("first_offset", INT64),
                    Field("last_offset", INT64),
                    Field("delivery_count", INT16),
                ))),
            ))),
        ))),
        Field("node_endpoints", _NODE_ENDPOINTS),
    ),
)

SHARE_ACKNOWLEDGE_REQUEST = Message(
    "ShareAcknowledgeRequest", valid="1", flexible="0+", fields=(
        Field("group_id", STRING, nullable="0+"),
        Field("member_id", STRING, nullable="0+"),
        Field("share_session_epoch", INT32),
        Field("topics", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("acknowledgement_batches", _ACKNOWLEDGEMENT_BATCHES),
            ))),
        ))),
    ),
)

SHARE_ACKNOWLEDGE_RESPONSE = Message(
    "ShareAcknowledgeResponse", valid="1", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("responses", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
                Field("current_leader", _CURRENT_LEADER),
            ))),
        ))),
        Field("node_endpoints", _NODE_ENDPOINTS),
    ),
)

# ------------------------------------------------------------------ the share state APIs

_STATE_BATCHES = Array(Struct(
    Field("first_offset", INT64),
    Field("last_offset", INT64),
    Field("delivery_state", INT8),
    Field("delivery_count", INT16),
))
"""A range of offsets in one state: 0 available, 2 acknowledged, 4 archived."""


def _state_request(name: str, *partition_fields: Field) -> Message:
    """A share state request: a group, and per topic id the partitions it is about."""
    return Message(name, valid="0", flexible="0+", fields=(
        Field("group_id", STRING),
        Field("topics", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition", INT32),
                *partition_fields,
            ))),
        ))),
    ))


def _state_response(name: str, *partition_fields: Field) -> Message:
    """A share state response: per topic id, each partition's error and answer."""
    return Message(name, valid="0", flexible="0+", fields=(
        Field("results", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
                *partition_fields,
            ))),
        ))),
    ))


INITIALIZE_SHARE_GROUP_STATE_REQUEST = _state_request(
    "InitializeShareGroupStateRequest", Field("state_epoch", INT32), Field("start_offset", INT64))
INITIALIZE_SHARE_GROUP_STATE_RESPONSE = _state_response("InitializeShareGroupStateResponse")

READ_SHARE_GROUP_STATE_REQUEST = _state_request(
    "ReadShareGroupStateRequest", Field("leader_epoch", INT32))
READ_SHARE_GROUP_STATE_RESPONSE = _state_response(
    "ReadShareGroupStateResponse", Field("state_epoch", INT32), Field("start_offset", INT64),
    Field("state_batches", _STATE_BATCHES))

WRITE_SHARE_GROUP_STATE_REQUEST = _state_request(
    "WriteShareGroupStateRequest", Field("state_epoch", INT32), Field("leader_epoch", INT32),
    Field("start_offset", INT64), Field("state_batches", _STATE_BATCHES))
WRITE_SHARE_GROUP_STATE_RESPONSE = _state_response("WriteShareGroupStateResponse")

DELETE_SHARE_GROUP_STATE_REQUEST = _state_request("DeleteShareGroupStateRequest")
DELETE_SHARE_GROUP_STATE_RESPONSE = _state_response("DeleteShareGroupStateResponse")

READ_SHARE_GROUP_STATE_SUMMARY_REQUEST = _state_request(
    "ReadShareGroupStateSummaryRequest", Field("leader_epoch", INT32))
READ_SHARE_GROUP_STATE_SUMMARY_RESPONSE = _state_response(
    "ReadShareGroupStateSummaryResponse", Field("state_epoch", INT32),
    Field("start_offset", INT64))

# ------------------------------------------------------------------ the admin APIs

DESCRIBE_SHARE_GROUP_OFFSETS_REQUEST = Message(
    "DescribeShareGroupOffsetsRequest", valid="0", flexible="0+", fields=(
        Field("groups", Array(Struct(
            Field("group_id", STRING),
            Field("topics", Array(Struct(
                Field("topic_name", STRING),
                Field("partitions", Array(INT32)),
            )), nullable="0+"),
        ))),
    ),
)

DESCRIBE_SHARE_GROUP_OFFSETS_RESPONSE = Message(
    "DescribeShareGroupOffsetsResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("groups", Array(Struct(
            Field("group_id", STRING),
            Field("topics", Array(Struct(
                Field("topic_name", STRING),
                Field("topic_id", UUID),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32),
                    Field("start_offset", INT64),
                    Field("leader_epoch", INT32),
                    Field("error_code", INT16),
                    Field("error_message", STRING, nullable="0+"),
                ))),
            ))),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ))),
    ),
)

ALTER_SHARE_GROUP_OFFSETS_REQUEST = Message(
    "AlterShareGroupOffsetsRequest", valid="0", flexible="0+", fields=(
        Field("group_id", STRING),
        Field("topics", Array(Struct(
            Field("topic_name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("start_offset", INT64),
            ))),
        ))),
    ),
)

ALTER_SHARE_GROUP_OFFSETS_RESPONSE = Message(
    "AlterShareGroupOffsetsResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("responses", Array(Struct(
            Field("topic_name", STRING),
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
            ))),
        ))),
    ),
)
