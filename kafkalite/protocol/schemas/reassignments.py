"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) (KIP-455): move a
partition's replicas to other brokers, cancel a move, list the moves under way. Both are
answered by the controller."""

from kafkalite.protocol.primitives import INT16, INT32, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

ALTER_PARTITION_REASSIGNMENTS_REQUEST = Message(
    "AlterPartitionReassignmentsRequest", valid="0", flexible="0+", fields=(
        Field("timeout_ms", INT32, default=60000),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("replicas", Array(INT32), nullable="0+"),
            ))),
        ))),
    ),
)

ALTER_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    "AlterPartitionReassignmentsResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("responses", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
            ))),
        ))),
    ),
)

LIST_PARTITION_REASSIGNMENTS_REQUEST = Message(
    "ListPartitionReassignmentsRequest", valid="0", flexible="0+", fields=(
        Field("timeout_ms", INT32, default=60000),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partition_indexes", Array(INT32)),
        )), nullable="0+"),
    ),
)

LIST_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    "ListPartitionReassignmentsResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("replicas", Array(INT32)),
                Field("adding_replicas", Array(INT32)),
                Field("removing_replicas", Array(INT32)),
            ))),
        ))),
    ),
)
