"""The controller's requests to brokers and the brokers' ControlledShutdown (keys 4-7).

One non-flexible version of each, the shape ZooKeeper-mode Kafka used: LeaderAndIsr v0-1
and UpdateMetadata v4 carry partition states with their topic names ungrouped,
StopReplica v1 groups partition indexes by topic, ControlledShutdown v1 names the broker.
"""

from kafkalite.protocol.primitives import BOOL, INT16, INT32, INT64, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

LEADER_AND_ISR_REQUEST = Message(
    "LeaderAndIsrRequest", valid="0-1", flexible="none", fields=(
        Field("controller_id", INT32),
        Field("controller_epoch", INT32),
        Field("ungrouped_partition_states", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
            Field("controller_epoch", INT32),
            Field("leader", INT32),
            Field("leader_epoch", INT32),
            Field("isr", Array(INT32)),
            Field("partition_epoch", INT32),
            Field("replicas", Array(INT32)),
            Field("is_new", BOOL, "1+"),
        ))),
        Field("live_leaders", Array(Struct(
            Field("broker_id", INT32),
            Field("host_name", STRING),
            Field("port", INT32),
        ))),
    ),
)

LEADER_AND_ISR_RESPONSE = Message(
    "LeaderAndIsrResponse", valid="0-1", flexible="none", fields=(
        Field("error_code", INT16),
        Field("partition_errors", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ))),
    ),
)

STOP_REPLICA_REQUEST = Message(
    "StopReplicaRequest", valid="1", flexible="none", fields=(
        Field("controller_id", INT32),
        Field("controller_epoch", INT32),
        Field("broker_epoch", INT64, default=-1),
        Field("delete_partitions", BOOL),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partition_indexes", Array(INT32)),
        ))),
    ),
)

STOP_REPLICA_RESPONSE = Message(
    "StopReplicaResponse", valid="1", flexible="none", fields=(
        Field("error_code", INT16),
        Field("partition_errors", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ))),
    ),
)

UPDATE_METADATA_REQUEST = Message(
    "UpdateMetadataRequest", valid="4", flexible="none", fields=(
        Field("controller_id", INT32),
        Field("controller_epoch", INT32),
        Field("ungrouped_partition_states", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
            Field("controller_epoch", INT32),
            Field("leader", INT32),
            Field("leader_epoch", INT32),
            Field("isr", Array(INT32)),
            Field("zk_version", INT32),
            Field("replicas", Array(INT32)),
            Field("offline_replicas", Array(INT32)),
        ))),
        Field("live_brokers", Array(Struct(
            Field("id", INT32),
            Field("endpoints", Array(Struct(
                Field("port", INT32),
                Field("host", STRING),
                Field("listener", STRING),
                Field("security_protocol", INT16),
            ))),
            Field("rack", STRING, nullable="0+"),
        ))),
    ),
)

UPDATE_METADATA_RESPONSE = Message(
    "UpdateMetadataResponse", valid="4", flexible="none", fields=(
        Field("error_code", INT16),
    ),
)

CONTROLLED_SHUTDOWN_REQUEST = Message(
    "ControlledShutdownRequest", valid="1", flexible="none", fields=(
        Field("broker_id", INT32),
    ),
)

CONTROLLED_SHUTDOWN_RESPONSE = Message(
    "ControlledShutdownResponse", valid="1", flexible="none", fields=(
        Field("error_code", INT16),
        Field("remaining_partitions", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
        ))),
    ),
)
