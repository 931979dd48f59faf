"""ApiVersions (key 18): the version handshake every client sends first."""

from kafkalite.protocol.primitives import BOOL, INT16, INT32, INT64, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

API_VERSIONS_REQUEST = Message(
    "ApiVersionsRequest", valid="0-4", flexible="3+", fields=(
        Field("client_software_name", STRING, "3+"),
        Field("client_software_version", STRING, "3+"),
    ),
)

API_VERSIONS_RESPONSE = Message(
    "ApiVersionsResponse", valid="0-4", flexible="3+", fields=(
        Field("error_code", INT16),
        Field("api_keys", Array(Struct(
            Field("api_key", INT16),
            Field("min_version", INT16),
            Field("max_version", INT16),
        ))),
        Field("throttle_time_ms", INT32, "1+"),
        Field("supported_features", Array(Struct(
            Field("name", STRING),
            Field("min_version", INT16),
            Field("max_version", INT16),
        )), "3+", tag=0, tagged="3+"),
        Field("finalized_features_epoch", INT64, "3+", tag=1, tagged="3+", default=-1),
        Field("finalized_features", Array(Struct(
            Field("name", STRING),
            Field("max_version_level", INT16),
            Field("min_version_level", INT16),
        )), "3+", tag=2, tagged="3+"),
        Field("zk_migration_ready", BOOL, "3+", tag=3, tagged="3+"),
    ),
)
