"""ElectLeaders (43): preferred (type 0) or unclean (type 1) leader elections, answered by
the controller."""

import enum

from kafkalite.protocol.primitives import INT8, INT16, INT32, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct


class ElectionType(enum.IntEnum):
    """``election_type`` codes (v0 requests are preferred elections)."""

    PREFERRED = 0
    UNCLEAN = 1


ELECT_LEADERS_REQUEST = Message(
    "ElectLeadersRequest", valid="0-2", flexible="2+", fields=(
        Field("election_type", INT8, "1+"),
        Field("topic_partitions", Array(Struct(
            Field("topic", STRING),
            Field("partitions", Array(INT32)),
        )), nullable="0+"),
        Field("timeout_ms", INT32, default=60000),
    ),
)

ELECT_LEADERS_RESPONSE = Message(
    "ElectLeadersResponse", valid="0-2", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, "1+"),
        Field("replica_election_results", Array(Struct(
            Field("topic", STRING),
            Field("partition_result", Array(Struct(
                Field("partition_id", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
            ))),
        ))),
    ),
)
