"""Consumer groups of the KIP-848 protocol: ConsumerGroupHeartbeat (68), by which a member
joins, stays, reconciles its assignment and leaves, and ConsumerGroupDescribe (69).

Versions: ConsumerGroupHeartbeat v1 only, the one librdkafka 2.16 sends (v0 was Kafka
3.7's early access; v1 adds ``subscribed_topic_regex``); ConsumerGroupDescribe v0.
"""

from kafkalite.protocol.primitives import BOOL, INT16, INT32, STRING, UUID
from kafkalite.protocol.schema import Array, Field, Message, Struct
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED

_TOPIC_PARTITIONS = Struct(
    Field("topic_id", UUID),
    Field("partitions", Array(INT32)),
)

CONSUMER_GROUP_HEARTBEAT_REQUEST = Message(
    "ConsumerGroupHeartbeatRequest", valid="1", flexible="0+", fields=(
        Field("group_id", STRING),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("instance_id", STRING, nullable="0+"),
        Field("rack_id", STRING, nullable="0+"),
        Field("rebalance_timeout_ms", INT32, default=-1),
        Field("subscribed_topic_names", Array(STRING), nullable="0+"),
        Field("subscribed_topic_regex", STRING, "1+", nullable="1+"),
        Field("server_assignor", STRING, nullable="0+"),
        Field("topic_partitions", Array(_TOPIC_PARTITIONS), nullable="0+"),
    ),
)

CONSUMER_GROUP_HEARTBEAT_RESPONSE = Message(
    "ConsumerGroupHeartbeatResponse", valid="1", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("member_id", STRING, nullable="0+"),
        Field("member_epoch", INT32),
        Field("heartbeat_interval_ms", INT32),
        Field("assignment", Struct(
            Field("topic_partitions", Array(_TOPIC_PARTITIONS)),
        ), nullable="0+"),
    ),
)

CONSUMER_GROUP_DESCRIBE_REQUEST = Message(
    "ConsumerGroupDescribeRequest", valid="0", flexible="0+", fields=(
        Field("group_ids", Array(STRING)),
        Field("include_authorized_operations", BOOL),
    ),
)

_DESCRIBED_ASSIGNMENT = Struct(
    Field("topic_partitions", Array(Struct(
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", Array(INT32)),
    ))),
)

CONSUMER_GROUP_DESCRIBE_RESPONSE = Message(
    "ConsumerGroupDescribeResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("groups", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("group_id", STRING),
            Field("group_state", STRING),
            Field("group_epoch", INT32),
            Field("assignment_epoch", INT32),
            Field("assignor_name", STRING),
            Field("members", Array(Struct(
                Field("member_id", STRING),
                Field("instance_id", STRING, nullable="0+"),
                Field("rack_id", STRING, nullable="0+"),
                Field("member_epoch", INT32),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("subscribed_topic_names", Array(STRING)),
                Field("subscribed_topic_regex", STRING, nullable="0+"),
                Field("assignment", _DESCRIBED_ASSIGNMENT),
                Field("target_assignment", _DESCRIBED_ASSIGNMENT),
            ))),
            Field("authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_NOT_REQUESTED),
        ))),
    ),
)
