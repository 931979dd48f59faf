"""The controller's requests to brokers and the brokers' ControlledShutdown (keys 4-7).

The non-flexible versions ZooKeeper-mode Kafka used. LeaderAndIsr v0-1 and UpdateMetadata
v4 carry partition states with their topic names ungrouped; LeaderAndIsr v2 and
UpdateMetadata v5 group them by topic and add the target broker's epoch (KIP-380), which
StopReplica v1 and ControlledShutdown v2 carry too. StopReplica v1 groups partition indexes
by topic; ControlledShutdown names the broker.
"""

from kafkalite.protocol.primitives import BOOL, INT16, INT32, INT64, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

_LEADER_AND_ISR_PARTITION = (
    Field("partition_index", INT32),
    Field("controller_epoch", INT32),
    Field("leader", INT32),
    Field("leader_epoch", INT32),
    Field("isr", Array(INT32)),
    Field("partition_epoch", INT32),
    Field("replicas", Array(INT32)),
    Field("is_new", BOOL, "1+"),
)

LEADER_AND_ISR_REQUEST = Message(
    "LeaderAndIsrRequest", valid="0-2", flexible="none", fields=(
        Field("controller_id", INT32),
        Field("controller_epoch", INT32),
        Field("broker_epoch", INT64, "2+", default=-1),
        Field("ungrouped_partition_states", Array(Struct(
            Field("topic_name", STRING), *_LEADER_AND_ISR_PARTITION)), "0-1"),
        Field("topic_states", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_states", Array(Struct(*_LEADER_AND_ISR_PARTITION))),
        )), "2+"),
        Field("live_leaders", Array(Struct(
            Field("broker_id", INT32),
            Field("host_name", STRING),
            Field("port", INT32),
        ))),
    ),
)

LEADER_AND_ISR_RESPONSE = Message(
    "LeaderAndIsrResponse", valid="0-2", flexible="none", fields=(
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

_UPDATE_METADATA_PARTITION = (
    Field("partition_index", INT32),
    Field("controller_epoch", INT32),
    Field("leader", INT32),
    Field("leader_epoch", INT32),
    Field("isr", Array(INT32)),
    Field("zk_version", INT32),
    Field("replicas", Array(INT32)),
    Field("offline_replicas", Array(INT32)),
)

UPDATE_METADATA_REQUEST = Message(
    "UpdateMetadataRequest", valid="4-5", flexible="none", fields=(
        Field("controller_id", INT32),
        Field("controller_epoch", INT32),
        Field("broker_epoch", INT64, "5+", default=-1),
        Field("ungrouped_partition_states", Array(Struct(
            Field("topic_name", STRING), *_UPDATE_METADATA_PARTITION)), "4"),
        Field("topic_states", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_states", Array(Struct(*_UPDATE_METADATA_PARTITION))),
        )), "5+"),
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
    "UpdateMetadataResponse", valid="4-5", flexible="none", fields=(
        Field("error_code", INT16),
    ),
)

CONTROLLED_SHUTDOWN_REQUEST = Message(
    "ControlledShutdownRequest", valid="1-2", flexible="none", fields=(
        Field("broker_id", INT32),
        Field("broker_epoch", INT64, "2+", default=-1),
    ),
)

CONTROLLED_SHUTDOWN_RESPONSE = Message(
    "ControlledShutdownResponse", valid="1-2", flexible="none", fields=(
        Field("error_code", INT16),
        Field("remaining_partitions", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
        ))),
    ),
)
