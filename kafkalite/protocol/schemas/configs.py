"""Config changes: AlterConfigs (33) and IncrementalAlterConfigs (44).

DescribeConfigs (32) lives with the other admin APIs in :mod:`.admin`.
"""

from kafkalite.protocol.primitives import BOOL, INT8, INT16, INT32, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

ALTER_CONFIGS_REQUEST = Message(
    "AlterConfigsRequest", valid="0-2", flexible="2+", fields=(
        Field("resources", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
            ))),
        ))),
        Field("validate_only", BOOL),
    ),
)

INCREMENTAL_ALTER_CONFIGS_REQUEST = Message(
    "IncrementalAlterConfigsRequest", valid="0-1", flexible="1+", fields=(
        Field("resources", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("config_operation", INT8),
                Field("value", STRING, nullable="0+"),
            ))),
        ))),
        Field("validate_only", BOOL),
    ),
)

_RESOURCE_RESULTS = Field("responses", Array(Struct(
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("resource_type", INT8),
    Field("resource_name", STRING),
)))

ALTER_CONFIGS_RESPONSE = Message(
    "AlterConfigsResponse", valid="0-2", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        _RESOURCE_RESULTS,
    ),
)

INCREMENTAL_ALTER_CONFIGS_RESPONSE = Message(
    "IncrementalAlterConfigsResponse", valid="0-1", flexible="1+", fields=(
        Field("throttle_time_ms", INT32),
        _RESOURCE_RESULTS,
    ),
)
