"""Cluster description: DescribeCluster (60) and DescribeLogDirs (35)."""

from kafkalite.protocol.primitives import BOOL, INT8, INT16, INT32, INT64, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED

DESCRIBE_CLUSTER_REQUEST = Message(
    "DescribeClusterRequest", valid="0-1", flexible="0+", fields=(
        Field("include_cluster_authorized_operations", BOOL),
        Field("endpoint_type", INT8, "1+", default=1),
    ),
)

DESCRIBE_CLUSTER_RESPONSE = Message(
    "DescribeClusterResponse", valid="0-1", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("endpoint_type", INT8, "1+", default=1),
        Field("cluster_id", STRING),
        Field("controller_id", INT32, default=-1),
        Field("brokers", Array(Struct(
            Field("broker_id", INT32),
            Field("host", STRING),
            Field("port", INT32),
            Field("rack", STRING, nullable="0+"),
        ))),
        Field("cluster_authorized_operations", INT32,
              default=AUTHORIZED_OPERATIONS_NOT_REQUESTED),
    ),
)

DESCRIBE_LOG_DIRS_REQUEST = Message(
    "DescribeLogDirsRequest", valid="0-4", flexible="2+", fields=(
        Field("topics", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(INT32)),
        )), nullable="0+"),
    ),
)

DESCRIBE_LOG_DIRS_RESPONSE = Message(
    "DescribeLogDirsResponse", valid="0-4", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, "3+"),
        Field("results", Array(Struct(
            Field("error_code", INT16),
            Field("log_dir", STRING),
            Field("topics", Array(Struct(
                Field("name", STRING),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32),
                    Field("partition_size", INT64),
                    Field("offset_lag", INT64),
                    Field("is_future_key", BOOL),
                ))),
            ))),
            Field("total_bytes", INT64, "4+", default=-1),
            Field("usable_bytes", INT64, "4+", default=-1),
        ))),
    ),
)
