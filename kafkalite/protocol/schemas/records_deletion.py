"""DeleteRecords (21): move partitions' log start offsets forward."""

from kafkalite.protocol.primitives import INT16, INT32, INT64, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

DELETE_RECORDS_REQUEST = Message(
    "DeleteRecordsRequest", valid="0-2", flexible="2+", fields=(
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("offset", INT64),
            ))),
        ))),
        Field("timeout_ms", INT32),
    ),
)

DELETE_RECORDS_RESPONSE = Message(
    "DeleteRecordsResponse", valid="0-2", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("low_watermark", INT64, default=-1),
                Field("error_code", INT16),
            ))),
        ))),
    ),
)
