"""Classic consumer-group APIs: FindCoordinator (10), JoinGroup (11), Heartbeat (12),
LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16), DeleteGroups (42),
OffsetDelete (47)."""

from kafkalite.protocol.primitives import BOOL, BYTES, INT8, INT16, INT32, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED

FIND_COORDINATOR_REQUEST = Message(
    "FindCoordinatorRequest", valid="0-6", flexible="3+", fields=(
        Field("key", STRING, "0-3"),
        Field("key_type", INT8, "1+"),
        # v4 (KIP-699) looks up several keys of one type in one request.
        Field("coordinator_keys", Array(STRING), "4+"),
    ),
)

FIND_COORDINATOR_RESPONSE = Message(
    "FindCoordinatorResponse", valid="0-6", flexible="3+", fields=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16, "0-3"),
        Field("error_message", STRING, "1-3", nullable="1-3"),
        Field("node_id", INT32, "0-3"),
        Field("host", STRING, "0-3"),
        Field("port", INT32, "0-3"),
        Field("coordinators", Array(Struct(
            Field("key", STRING),
            Field("node_id", INT32),
            Field("host", STRING),
            Field("port", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        )), "4+"),
    ),
)

JOIN_GROUP_REQUEST = Message(
    "JoinGroupRequest", valid="0-9", flexible="6+", fields=(
        Field("group_id", STRING),
        Field("session_timeout_ms", INT32),
        Field("rebalance_timeout_ms", INT32, "1+", default=-1),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "5+", nullable="5+"),
        Field("protocol_type", STRING),
        Field("protocols", Array(Struct(
            Field("name", STRING),
            Field("metadata", BYTES),
        ))),
        Field("reason", STRING, "8+", nullable="8+", default=None),
    ),
)

JOIN_GROUP_RESPONSE = Message(
    "JoinGroupResponse", valid="0-9", flexible="6+", fields=(
        Field("throttle_time_ms", INT32, "2+"),
        Field("error_code", INT16),
        Field("generation_id", INT32, default=-1),
        Field("protocol_type", STRING, "7+", nullable="7+"),
        Field("protocol_name", STRING, nullable="7+"),
        Field("leader", STRING),
        Field("skip_assignment", BOOL, "9+"),
        Field("member_id", STRING),
        Field("members", Array(Struct(
            Field("member_id", STRING),
            Field("group_instance_id", STRING, "5+", nullable="5+"),
            Field("metadata", BYTES),
        ))),
    ),
)

HEARTBEAT_REQUEST = Message(
    "HeartbeatRequest", valid="0-4", flexible="4+", fields=(
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "3+", nullable="3+"),
    ),
)

HEARTBEAT_RESPONSE = Message(
    "HeartbeatResponse", valid="0-4", flexible="4+", fields=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
    ),
)

LEAVE_GROUP_REQUEST = Message(
    "LeaveGroupRequest", valid="0-5", flexible="4+", fields=(
        Field("group_id", STRING),
        Field("member_id", STRING, "0-2"),
        Field("members", Array(Struct(
            Field("member_id", STRING),
            Field("group_instance_id", STRING, nullable="0+"),
            Field("reason", STRING, "5+", nullable="5+", default=None),
        )), "3+"),
    ),
)

LEAVE_GROUP_RESPONSE = Message(
    "LeaveGroupResponse", valid="0-5", flexible="4+", fields=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("members", Array(Struct(
            Field("member_id", STRING),
            Field("group_instance_id", STRING, nullable="0+"),
            Field("error_code", INT16),
        )), "3+"),
    ),
)

SYNC_GROUP_REQUEST = Message(
    "SyncGroupRequest", valid="0-5", flexible="4+", fields=(
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "3+", nullable="3+"),
        Field("protocol_type", STRING, "5+", nullable="5+"),
        Field("protocol_name", STRING, "5+", nullable="5+"),
        Field("assignments", Array(Struct(
            Field("member_id", STRING),
            Field("assignment", BYTES),
        ))),
    ),
)

SYNC_GROUP_RESPONSE = Message(
    "SyncGroupResponse", valid="0-5", flexible="4+", fields=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("protocol_type", STRING, "5+", nullable="5+"),
        Field("protocol_name", STRING, "5+", nullable="5+"),
        Field("assignment", BYTES),
    ),
)

DESCRIBE_GROUPS_REQUEST = Message(
    "DescribeGroupsRequest", valid="0-5", flexible="5+", fields=(
        Field("groups", Array(STRING)),
        Field("include_authorized_operations", BOOL, "3+"),
    ),
)

DESCRIBE_GROUPS_RESPONSE = Message(
    "DescribeGroupsResponse", valid="0-5", flexible="5+", fields=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("groups", Array(Struct(
            Field("error_code", INT16),
            Field("group_id", STRING),
            Field("group_state", STRING),
            Field("protocol_type", STRING),
            Field("protocol_data", STRING),
            Field("members", Array(Struct(
                Field("member_id", STRING),
                Field("group_instance_id", STRING, "4+", nullable="4+"),
                Field("client_id", STRING),
                Field("client_host", STRING),
                Field("member_metadata", BYTES),
                Field("member_assignment", BYTES),
            ))),
            Field("authorized_operations", INT32, "3+", default=AUTHORIZED_OPERATIONS_NOT_REQUESTED),
        ))),
    ),
)

LIST_GROUPS_REQUEST = Message(
    "ListGroupsRequest", valid="0-5", flexible="3+", fields=(
        Field("states_filter", Array(STRING), "4+"),  # KIP-518; empty lists every state
        Field("types_filter", Array(STRING), "5+"),  # KIP-848; empty lists every type
    ),
)

LIST_GROUPS_RESPONSE = Message(
    "ListGroupsResponse", valid="0-5", flexible="3+", fields=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16),
        Field("groups", Array(Struct(
            Field("group_id", STRING),
            Field("protocol_type", STRING),
            Field("group_state", STRING, "4+"),
            Field("group_type", STRING, "5+"),
        ))),
    ),
)

DELETE_GROUPS_REQUEST = Message(
    "DeleteGroupsRequest", valid="0-2", flexible="2+", fields=(
        Field("groups_names", Array(STRING)),
    ),
)

DELETE_GROUPS_RESPONSE = Message(
    "DeleteGroupsResponse", valid="0-2", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("group_id", STRING),
            Field("error_code", INT16),
        ))),
    ),
)

OFFSET_DELETE_REQUEST = Message(
    "OffsetDeleteRequest", valid="0", flexible="none", fields=(
        Field("group_id", STRING),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
            ))),
        ))),
    ),
)

OFFSET_DELETE_RESPONSE = Message(
    "OffsetDeleteResponse", valid="0", flexible="none", fields=(
        Field("error_code", INT16),
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ))),
        ))),
    ),
)
