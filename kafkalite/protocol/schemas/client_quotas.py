"""DescribeClientQuotas (48) and AlterClientQuotas (49) (KIP-546)."""

from kafkalite.protocol.primitives import BOOL, FLOAT64, INT8, INT16, INT32, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

_ENTITY = Array(Struct(
    Field("entity_type", STRING),
    Field("entity_name", STRING, nullable="0+"),
))
"""A quota entity: its (type, name) components; a null name is the type's default."""

DESCRIBE_CLIENT_QUOTAS_REQUEST = Message(
    "DescribeClientQuotasRequest", valid="0-1", flexible="1+", fields=(
        Field("components", Array(Struct(
            Field("entity_type", STRING),
            Field("match_type", INT8),
            Field("match", STRING, nullable="0+"),
        ))),
        Field("strict", BOOL),
    ),
)

DESCRIBE_CLIENT_QUOTAS_RESPONSE = Message(
    "DescribeClientQuotasResponse", valid="0-1", flexible="1+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("entries", Array(Struct(
            Field("entity", _ENTITY),
            Field("values", Array(Struct(
                Field("key", STRING),
                Field("value", FLOAT64),
            ))),
        )), nullable="0+"),
    ),
)

ALTER_CLIENT_QUOTAS_REQUEST = Message(
    "AlterClientQuotasRequest", valid="0-1", flexible="1+", fields=(
        Field("entries", Array(Struct(
            Field("entity", _ENTITY),
            Field("ops", Array(Struct(
                Field("key", STRING),
                Field("value", FLOAT64),
                Field("remove", BOOL),
            ))),
        ))),
        Field("validate_only", BOOL),
    ),
)

ALTER_CLIENT_QUOTAS_RESPONSE = Message(
    "AlterClientQuotasResponse", valid="0-1", flexible="1+", fields=(
        Field("throttle_time_ms", INT32),
        Field("entries", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("entity", _ENTITY),
        ))),
    ),
)
