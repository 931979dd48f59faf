"""Metadata (key 3): brokers, topics (with their ids from v10), partition leaders.

v9 is the first flexible version; v10 adds topic ids; v11 drops the cluster's authorized
operations (KIP-700: DescribeCluster carries them); v12 looks topics up by id (a null name).
"""

from kafkalite.protocol.primitives import BOOL, INT16, INT32, STRING, UUID
from kafkalite.protocol.schema import Array, Field, Message, Struct

AUTHORIZED_OPERATIONS_NOT_REQUESTED = -(2**31)
"""Authorized-operations value when the request did not ask for them."""

METADATA_REQUEST = Message(
    "MetadataRequest", valid="0-12", flexible="9+", fields=(
        Field("topics", Array(Struct(
            Field("topic_id", UUID, "10+"),
            Field("name", STRING, nullable="10+"),
        )), nullable="1+"),
        Field("allow_auto_topic_creation", BOOL, "4+", default=True),
        Field("include_cluster_authorized_operations", BOOL, "8-10"),
        Field("include_topic_authorized_operations", BOOL, "8+"),
    ),
)

METADATA_RESPONSE = Message(
    "MetadataResponse", valid="0-12", flexible="9+", fields=(
        Field("throttle_time_ms", INT32, "3+"),
        Field("brokers", Array(Struct(
            Field("node_id", INT32),
            Field("host", STRING),
            Field("port", INT32),
            Field("rack", STRING, "1+", nullable="1+"),
        ))),
        Field("cluster_id", STRING, "2+", nullable="2+"),
        Field("controller_id", INT32, "1+", default=-1),
        Field("topics", Array(Struct(
            Field("error_code", INT16),
            Field("name", STRING, nullable="12+"),
            Field("topic_id", UUID, "10+"),
            Field("is_internal", BOOL, "1+"),
            Field("partitions", Array(Struct(
                Field("error_code", INT16),
                Field("partition_index", INT32),
                Field("leader_id", INT32),
                Field("leader_epoch", INT32, "7+", default=-1),
                Field("replica_nodes", Array(INT32)),
                Field("isr_nodes", Array(INT32)),
                Field("offline_replicas", Array(INT32), "5+"),
            ))),
            Field("topic_authorized_operations", INT32, "8+",
                  default=AUTHORIZED_OPERATIONS_NOT_REQUESTED),
        ))),
        Field("cluster_authorized_operations", INT32, "8-10",
              default=AUTHORIZED_OPERATIONS_NOT_REQUESTED),
    ),
)
