"""The wire shapes the modern group protocols' heartbeat and describe APIs share:
ConsumerGroupHeartbeat/Describe (KIP-848, :mod:`.consumer_groups`) and
ShareGroupHeartbeat/Describe (KIP-932, :mod:`.share`) answer with the same fields, one
definition here for both."""

from kafkalite.protocol.primitives import BOOL, INT16, INT32, STRING, UUID
from kafkalite.protocol.schema import Array, Field, Struct
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED

TOPIC_PARTITIONS = Struct(
    Field("topic_id", UUID),
    Field("partitions", Array(INT32)),
)
"""An assignment's topic, by id, with its partitions."""

HEARTBEAT_RESPONSE_FIELDS = (
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("member_id", STRING, nullable="0+"),
    Field("member_epoch", INT32),
    Field("heartbeat_interval_ms", INT32),
    Field("assignment", Struct(
        Field("topic_partitions", Array(TOPIC_PARTITIONS)),
    ), nullable="0+"),
)

DESCRIBE_REQUEST_FIELDS = (
    Field("group_ids", Array(STRING)),
    Field("include_authorized_operations", BOOL),
)

DESCRIBED_ASSIGNMENT = Struct(
    Field("topic_partitions", Array(Struct(
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", Array(INT32)),
    ))),
)
"""An assignment as the describes answer it: each topic by id and name."""


def describe_response_fields(*member_fields: Field) -> tuple[Field, ...]:
    """A describe response's fields, its members described by ``member_fields``."""
    return (
        Field("throttle_time_ms", INT32),
        Field("groups", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("group_id", STRING),
            Field("group_state", STRING),
            Field("group_epoch", INT32),
            Field("assignment_epoch", INT32),
            Field("assignor_name", STRING),
            Field("members", Array(Struct(*member_fields))),
            Field("authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_NOT_REQUESTED),
        ))),
    )
