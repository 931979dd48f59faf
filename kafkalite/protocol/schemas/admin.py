"""Admin APIs: CreateTopics (19), DeleteTopics (20), DescribeConfigs (32), CreatePartitions (37).

CreateTopics v5 and DeleteTopics v4 are flexible; CreateTopics v5 answers each new topic's
partition count, replication factor and configs, v7 its id (KIP-516); DeleteTopics v5
answers an error message, v6 takes topics by name or by id and answers their ids.
"""

from kafkalite.protocol.primitives import BOOL, INT8, INT16, INT32, STRING, UUID
from kafkalite.protocol.schema import Array, Field, Message, Struct

CREATE_TOPICS_REQUEST = Message(
    "CreateTopicsRequest", valid="0-7", flexible="5+", fields=(
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("num_partitions", INT32),
            Field("replication_factor", INT16),
            Field("assignments", Array(Struct(
                Field("partition_index", INT32),
                Field("broker_ids", Array(INT32)),
            ))),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
            ))),
        ))),
        Field("timeout_ms", INT32, default=60000),
        Field("validate_only", BOOL, "1+"),
    ),
)

CREATE_TOPICS_RESPONSE = Message(
    "CreateTopicsResponse", valid="0-7", flexible="5+", fields=(
        Field("throttle_time_ms", INT32, "2+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("topic_id", UUID, "7+"),
            Field("error_code", INT16),
            Field("error_message", STRING, "1+", nullable="0+"),
            Field("topic_config_error_code", INT16, "5+", tag=0, tagged="5+"),
            Field("num_partitions", INT32, "5+", default=-1),
            Field("replication_factor", INT16, "5+", default=-1),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("value", STRING, nullable="5+"),
                Field("read_only", BOOL),
                Field("config_source", INT8, default=-1),
                Field("is_sensitive", BOOL),
            )), "5+", nullable="5+"),
        ))),
    ),
)

DELETE_TOPICS_REQUEST = Message(
    "DeleteTopicsRequest", valid="0-6", flexible="4+", fields=(
        Field("topics", Array(Struct(
            Field("name", STRING, nullable="6+"),
            Field("topic_id", UUID),
        )), "6+"),
        Field("topic_names", Array(STRING), "0-5"),
        Field("timeout_ms", INT32),
    ),
)

DELETE_TOPICS_RESPONSE = Message(
    "DeleteTopicsResponse", valid="0-6", flexible="4+", fields=(
        Field("throttle_time_ms", INT32, "1+"),
        Field("responses", Array(Struct(
            Field("name", STRING, nullable="6+"),
            Field("topic_id", UUID, "6+"),
            Field("error_code", INT16),
            Field("error_message", STRING, "5+", nullable="5+"),
        ))),
    ),
)

DESCRIBE_CONFIGS_REQUEST = Message(
    "DescribeConfigsRequest", valid="0-4", flexible="4+", fields=(
        Field("resources", Array(Struct(
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configuration_keys", Array(STRING), nullable="0+"),
        ))),
        Field("include_synonyms", BOOL, "1+"),
        Field("include_documentation", BOOL, "3+"),
    ),
)

DESCRIBE_CONFIGS_RESPONSE = Message(
    "DescribeConfigsResponse", valid="0-4", flexible="4+", fields=(
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
                Field("read_only", BOOL),
                Field("is_default", BOOL, "0"),
                Field("config_source", INT8, "1+", default=-1),
                Field("is_sensitive", BOOL),
                Field("synonyms", Array(Struct(
                    Field("name", STRING),
                    Field("value", STRING, nullable="0+"),
                    Field("source", INT8),
                )), "1+"),
                Field("config_type", INT8, "3+"),
                Field("documentation", STRING, "3+", nullable="0+"),
            ))),
        ))),
    ),
)

CREATE_PARTITIONS_REQUEST = Message(
    "CreatePartitionsRequest", valid="0-3", flexible="2+", fields=(
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("count", INT32),
            Field("assignments", Array(Struct(
                Field("broker_ids", Array(INT32)),
            )), nullable="0+"),
        ))),
        Field("timeout_ms", INT32),
        Field("validate_only", BOOL),
    ),
)

CREATE_PARTITIONS_RESPONSE = Message(
    "CreatePartitionsResponse", valid="0-3", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("name", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ))),
    ),
)
