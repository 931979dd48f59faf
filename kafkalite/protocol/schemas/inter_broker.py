"""The controller's requests to brokers and the brokers' ControlledShutdown (keys 4-7).

The versions ZooKeeper-mode Kafka used. LeaderAndIsr v0-1 and UpdateMetadata v4 carry
partition states with their topic names ungrouped; LeaderAndIsr v2 and UpdateMetadata v5
group them by topic and add the target broker's epoch (KIP-380), which StopReplica v1 and
ControlledShutdown v2 carry too. LeaderAndIsr v3 adds the replicas being added and removed
(KIP-455), v4 and UpdateMetadata v6 are flexible, and LeaderAndIsr v5 and UpdateMetadata v7
carry each topic's id (KIP-516); LeaderAndIsr v5 answers per topic id. StopReplica v1
groups partition indexes by topic; ControlledShutdown names the broker.
"""

from kafkalite.protocol.primitives import BOOL, INT8, INT16, INT32, INT64, STRING, UUID
from kafkalite.protocol.schema import Array, Field, Message, Struct

_LEADER_AND_ISR_PARTITION = (
    Field("partition_index", INT32),
    Field("controller_epoch", INT32),
    Field("leader", INT32),
    Field("leader_epoch", INT32),
    Field("isr", Array(INT32)),
    Field("partition_epoch", INT32),
    Field("replicas", Array(INT32)),
    Field("adding_replicas", Array(INT32), "3+"),
    Field("removing_replicas", Array(INT32), "3+"),
    Field("is_new", BOOL, "1+"),
)

LEADER_AND_ISR_REQUEST = Message(
    "LeaderAndIsrRequest", valid="0-5", flexible="4+", fields=(
        Field("controller_id", INT32),
        Field("controller_epoch", INT32),
        Field("broker_epoch", INT64, "2+", default=-1),
        Field("type", INT8, "5+"),
        Field("ungrouped_partition_states", Array(Struct(
            Field("topic_name", STRING), *_LEADER_AND_ISR_PARTITION)), "0-1"),
        Field("topic_states", Array(Struct(
            Field("topic_name", STRING),
            Field("topic_id", UUID, "5+"),
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
    "LeaderAndIsrResponse", valid="0-5", flexible="4+", fields=(
        Field("error_code", INT16),
        Field("partition_errors", Array(Struct(
            Field("topic_name", STRING),
            Field("partition_index", INT32),
            Field("error_code", INT16),
        )), "0-4"),
        Field("topics", Array(Struct(
            Field("topic_id", UUID),
            Field("partition_errors", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ))),
        )), "5+"),
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
    "UpdateMetadataRequest", valid="4-7", flexible="6+", fields=(
        Field("controller_id", INT32),
        Field("controller_epoch", INT32),
        Field("broker_epoch", INT64, "5+", default=-1),
        Field("ungrouped_partition_states", Array(Struct(
            Field("topic_name", STRING), *_UPDATE_METADATA_PARTITION)), "4"),
        Field("topic_states", Array(Struct(
            Field("topic_name", STRING),
            Field("topic_id", UUID, "7+"),
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
    "UpdateMetadataResponse", valid="4-7", flexible="6+", fields=(
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
