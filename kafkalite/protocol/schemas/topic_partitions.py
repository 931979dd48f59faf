"""DescribeTopicPartitions (key 75, Kafka 3.8+): topics and their partitions, paged.

Metadata answers every partition of every topic asked for in one response; this API stops
after ``response_partition_limit`` partitions and returns a ``next_cursor`` (a topic and a
partition index) to continue from, so an admin client can list topics with hundreds of
thousands of partitions. An empty ``topics`` list asks for every topic.
"""

from kafkalite.protocol.primitives import BOOL, INT16, INT32, STRING, UUID
from kafkalite.protocol.schema import Array, Field, Message, Struct
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED

DEFAULT_PARTITION_LIMIT = 2000
"""The request's default ``response_partition_limit`` (Kafka's schema default)."""

CURSOR = Struct(
    Field("topic_name", STRING),
    Field("partition_index", INT32),
)

DESCRIBE_TOPIC_PARTITIONS_REQUEST = Message(
    "DescribeTopicPartitionsRequest", valid="0", flexible="0+", fields=(
        Field("topics", Array(Struct(
            Field("name", STRING),
        ))),
        Field("response_partition_limit", INT32, default=DEFAULT_PARTITION_LIMIT),
        Field("cursor", CURSOR, nullable="0+", default=None),
    ),
)

DESCRIBE_TOPIC_PARTITIONS_RESPONSE = Message(
    "DescribeTopicPartitionsResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("error_code", INT16),
            Field("name", STRING, nullable="0+"),
            Field("topic_id", UUID),
            Field("is_internal", BOOL),
            Field("partitions", Array(Struct(
                Field("error_code", INT16),
                Field("partition_index", INT32),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32, default=-1),
                Field("replica_nodes", Array(INT32)),
                Field("isr_nodes", Array(INT32)),
                Field("eligible_leader_replicas", Array(INT32), nullable="0+", default=None),
                Field("last_known_elr", Array(INT32), nullable="0+", default=None),
                Field("offline_replicas", Array(INT32)),
            ))),
            Field("topic_authorized_operations", INT32,
                  default=AUTHORIZED_OPERATIONS_NOT_REQUESTED),
        ))),
        Field("next_cursor", CURSOR, nullable="0+", default=None),
    ),
)
