"""Consumer groups of the KIP-848 protocol: ConsumerGroupHeartbeat (68), by which a member
joins, stays, reconciles its assignment and leaves, and ConsumerGroupDescribe (69).

Versions: ConsumerGroupHeartbeat v1 only, the one librdkafka 2.16 sends (v0 was Kafka
3.7's early access; v1 adds ``subscribed_topic_regex``); ConsumerGroupDescribe v0.
"""

from kafkalite.protocol.primitives import INT32, STRING
from kafkalite.protocol.schema import Array, Field, Message
from kafkalite.protocol.schemas.modern_groups import (
    DESCRIBE_REQUEST_FIELDS,
    DESCRIBED_ASSIGNMENT,
    HEARTBEAT_RESPONSE_FIELDS,
    TOPIC_PARTITIONS,
    describe_response_fields,
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
        Field("topic_partitions", Array(TOPIC_PARTITIONS), nullable="0+"),
    ),
)

CONSUMER_GROUP_HEARTBEAT_RESPONSE = Message(
    "ConsumerGroupHeartbeatResponse", valid="1", flexible="0+",
    fields=HEARTBEAT_RESPONSE_FIELDS)

CONSUMER_GROUP_DESCRIBE_REQUEST = Message(
    "ConsumerGroupDescribeRequest", valid="0", flexible="0+", fields=DESCRIBE_REQUEST_FIELDS)

CONSUMER_GROUP_DESCRIBE_RESPONSE = Message(
    "ConsumerGroupDescribeResponse", valid="0", flexible="0+",
    fields=describe_response_fields(
        Field("member_id", STRING),
        Field("instance_id", STRING, nullable="0+"),
        Field("rack_id", STRING, nullable="0+"),
        Field("member_epoch", INT32),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", Array(STRING)),
        Field("subscribed_topic_regex", STRING, nullable="0+"),
        Field("assignment", DESCRIBED_ASSIGNMENT),
        Field("target_assignment", DESCRIBED_ASSIGNMENT),
    ))
