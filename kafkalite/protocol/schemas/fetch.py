"""Fetch (key 1), versions 0-17 (v0-3 read legacy message sets).

v12 is flexible and adds each partition's ``last_fetched_epoch``, answered with a
``diverging_epoch`` when the fetcher's log has diverged from the leader's (KIP-595's
truncation detection); v13 names topics by id (KIP-516) instead of by name. v14 only adds an
error of tiered storage; v15 (KIP-903) moves ``replica_id`` into the tagged ``replica_state``
with the replica's broker epoch; v16 (KIP-951) lists the endpoints of the leaders named in
``current_leader``; v17 (KIP-853) tags each partition with the fetching replica's directory id.
"""

from kafkalite.protocol.primitives import (
    INT8,
    INT16,
    INT32,
    INT32_MAX,
    INT64,
    RECORDS,
    STRING,
    UUID,
)
from kafkalite.protocol.schema import Array, Field, Message, Struct
from kafkalite.protocol.schemas.leader_hints import CURRENT_LEADER, NODE_ENDPOINTS

FETCH_REQUEST = Message(
    "FetchRequest", valid="0-17", flexible="12+", fields=(
        Field("cluster_id", STRING, "12+", nullable="12+", tag=0, tagged="12+", default=None),
        Field("replica_id", INT32, "0-14", default=-1),
        Field("replica_state", Struct(
            Field("replica_id", INT32, default=-1),
            Field("replica_epoch", INT64, default=-1),
        ), "15+", tag=1, tagged="15+"),
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, "3+", default=INT32_MAX),
        Field("isolation_level", INT8, "4+"),
        Field("session_id", INT32, "7+"),
        Field("session_epoch", INT32, "7+", default=-1),
        Field("topics", Array(Struct(
            Field("topic", STRING, "0-12"),
            Field("topic_id", UUID, "13+"),
            Field("partitions", Array(Struct(
                Field("partition", INT32),
                Field("current_leader_epoch", INT32, "9+", default=-1),
                Field("fetch_offset", INT64),
                Field("last_fetched_epoch", INT32, "12+", default=-1),
                Field("log_start_offset", INT64, "5+", default=-1),
                Field("partition_max_bytes", INT32),
                Field("replica_directory_id", UUID, "17+", tag=0, tagged="17+"),
            ))),
        ))),
        Field("forgotten_topics_data", Array(Struct(
            Field("topic", STRING, "7-12"),
            Field("topic_id", UUID, "13+"),
            Field("partitions", Array(INT32)),
        )), "7+"),
        Field("rack_id", STRING, "11+"),
    ),
)

FETCH_RESPONSE = Message(
    "FetchResponse", valid="0-17", flexible="12+", fields=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("error_code", INT16, "7+"),
        Field("session_id", INT32, "7+"),
        Field("responses", Array(Struct(
            Field("topic", STRING, "0-12"),
            Field("topic_id", UUID, "13+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("high_watermark", INT64),
                Field("last_stable_offset", INT64, "4+", default=-1),
                Field("log_start_offset", INT64, "5+", default=-1),
                Field("diverging_epoch", Struct(
                    Field("epoch", INT32, default=-1),
                    Field("end_offset", INT64, default=-1),
                ), "12+", tag=0, tagged="12+"),
                Field("current_leader", CURRENT_LEADER, "12+", tag=1, tagged="12+"),
                Field("aborted_transactions", Array(Struct(
                    Field("producer_id", INT64),
                    Field("first_offset", INT64),
                )), "4+", nullable="4+"),
                Field("preferred_read_replica", INT32, "11+", default=-1),
                Field("records", RECORDS, nullable="0+"),
            ))),
        ))),
        Field("node_endpoints", NODE_ENDPOINTS, "16+", tag=0, tagged="16+"),
    ),
)
