"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51)."""

from kafkalite.protocol.primitives import BYTES, INT8, INT16, INT32, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    "DescribeUserScramCredentialsRequest", valid="0", flexible="0+", fields=(
        Field("users", Array(Struct(Field("name", STRING))), nullable="0+"),
    ),
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    "DescribeUserScramCredentialsResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("results", Array(Struct(
            Field("user", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("credential_infos", Array(Struct(
                Field("mechanism", INT8),
                Field("iterations", INT32),
            ))),
        ))),
    ),
)

ALTER_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    "AlterUserScramCredentialsRequest", valid="0", flexible="0+", fields=(
        Field("deletions", Array(Struct(
            Field("name", STRING),
            Field("mechanism", INT8),
        ))),
        Field("upsertions", Array(Struct(
            Field("name", STRING),
            Field("mechanism", INT8),
            Field("iterations", INT32),
            Field("salt", BYTES),
            Field("salted_password", BYTES),
        ))),
    ),
)

ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    "AlterUserScramCredentialsResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("user", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ))),
    ),
)
