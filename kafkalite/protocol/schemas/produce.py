"""Produce (key 0). v0-v2 carry legacy message sets; the schema is the same shape.

v10 (KIP-951) answers a partition refused with NOT_LEADER_OR_FOLLOWER with the partition's
``current_leader`` and that leader's endpoint in ``node_endpoints``, so the producer redirects
without a Metadata round trip. v11 (KIP-890) lets the broker answer TRANSACTION_ABORTABLE.
"""

from kafkalite.protocol.primitives import INT16, INT32, INT64, RECORDS, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct
from kafkalite.protocol.schemas.leader_hints import CURRENT_LEADER, NODE_ENDPOINTS

PRODUCE_REQUEST = Message(
    "ProduceRequest", valid="0-11", flexible="9+", fields=(
        Field("transactional_id", STRING, "3+", nullable="3+"),
        Field("acks", INT16),
        Field("timeout_ms", INT32),
        Field("topic_data", Array(Struct(
            Field("name", STRING),
            Field("partition_data", Array(Struct(
                Field("index", INT32),
                Field("records", RECORDS, nullable="0+"),
            ))),
        ))),
    ),
)

PRODUCE_RESPONSE = Message(
    "ProduceResponse", valid="0-11", flexible="9+", fields=(
        Field("responses", Array(Struct(
            Field("name", STRING),
            Field("partition_responses", Array(Struct(
                Field("index", INT32),
                Field("error_code", INT16),
                Field("base_offset", INT64),
                Field("log_append_time_ms", INT64, "2+", default=-1),
                Field("log_start_offset", INT64, "5+", default=-1),
                Field("record_errors", Array(Struct(
                    Field("batch_index", INT32),
                    Field("batch_index_error_message", STRING, nullable="0+"),
                )), "8+"),
                Field("error_message", STRING, "8+", nullable="8+"),
                Field("current_leader", CURRENT_LEADER, "10+", tag=0, tagged="10+"),
            ))),
        ))),
        Field("throttle_time_ms", INT32, "1+"),
        Field("node_endpoints", NODE_ENDPOINTS, "10+", tag=0, tagged="10+"),
    ),
)
