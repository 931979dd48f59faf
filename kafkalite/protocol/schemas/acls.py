"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31)."""

from kafkalite.protocol.primitives import INT8, INT16, INT32, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

_LITERAL = 3
"""The pattern type of version 0 requests, which predate prefixed patterns."""

DESCRIBE_ACLS_REQUEST = Message(
    "DescribeAclsRequest", valid="0-3", flexible="2+", fields=(
        Field("resource_type_filter", INT8),
        Field("resource_name_filter", STRING, nullable="0+"),
        Field("pattern_type_filter", INT8, "1+", default=_LITERAL),
        Field("principal_filter", STRING, nullable="0+"),
        Field("host_filter", STRING, nullable="0+"),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
)

DESCRIBE_ACLS_RESPONSE = Message(
    "DescribeAclsResponse", valid="0-3", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("resources", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("pattern_type", INT8, "1+", default=_LITERAL),
            Field("acls", Array(Struct(
                Field("principal", STRING),
                Field("host", STRING),
                Field("operation", INT8),
                Field("permission_type", INT8),
            ))),
        ))),
    ),
)

CREATE_ACLS_REQUEST = Message(
    "CreateAclsRequest", valid="0-3", flexible="2+", fields=(
        Field("creations", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("resource_pattern_type", INT8, "1+", default=_LITERAL),
            Field("principal", STRING),
            Field("host", STRING),
            Field("operation", INT8),
            Field("permission_type", INT8),
        ))),
    ),
)

CREATE_ACLS_RESPONSE = Message(
    "CreateAclsResponse", valid="0-3", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ))),
    ),
)

DELETE_ACLS_REQUEST = Message(
    "DeleteAclsRequest", valid="0-3", flexible="2+", fields=(
        Field("filters", Array(Struct(
            Field("resource_type_filter", INT8),
            Field("resource_name_filter", STRING, nullable="0+"),
            Field("pattern_type_filter", INT8, "1+", default=_LITERAL),
            Field("principal_filter", STRING, nullable="0+"),
            Field("host_filter", STRING, nullable="0+"),
            Field("operation", INT8),
            Field("permission_type", INT8),
        ))),
    ),
)

DELETE_ACLS_RESPONSE = Message(
    "DeleteAclsResponse", valid="0-3", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("filter_results", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("matching_acls", Array(Struct(
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
                Field("resource_type", INT8),
                Field("resource_name", STRING),
                Field("pattern_type", INT8, "1+", default=_LITERAL),
                Field("principal", STRING),
                Field("host", STRING),
                Field("operation", INT8),
                Field("permission_type", INT8),
            ))),
        ))),
    ),
)
