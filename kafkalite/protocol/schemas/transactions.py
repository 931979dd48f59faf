"""Transaction APIs: AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
WriteTxnMarkers (27), TxnOffsetCommit (28), DescribeProducers (61),
DescribeTransactions (65), ListTransactions (66).

AddPartitionsToTxn v4 is KIP-890's inter-broker form (several transactions, ``verify_only``):
brokers send it to verify a transaction, and the broker does not advertise it to clients
(see ``kafkalite_server.handlers.registry``). The KIP-890 client versions that only broaden
answers (AddOffsetsToTxn, EndTxn and TxnOffsetCommit v4 may
answer TRANSACTION_ABORTABLE) are served; AddPartitionsToTxn v5 (brokers' again) and EndTxn v5
(KIP-890 part 2, a new epoch at every transaction end, not in Kafka 3.9) are not: clients
negotiate down.
"""

from kafkalite.protocol.primitives import BOOL, INT16, INT32, INT64, STRING
from kafkalite.protocol.schema import Array, Field, Message, Struct

_TOPIC_PARTITIONS = Struct(
    Field("name", STRING),
    Field("partitions", Array(INT32)),
)

_TOPIC_RESULTS = Struct(
    Field("name", STRING),
    Field("results_by_partition", Array(Struct(
        Field("partition_index", INT32),
        Field("partition_error_code", INT16),
    ))),
)

ADD_PARTITIONS_TO_TXN_REQUEST = Message(
    "AddPartitionsToTxnRequest", valid="0-4", flexible="3+", fields=(
        Field("transactions", Array(Struct(
            Field("transactional_id", STRING),
            Field("producer_id", INT64),
            Field("producer_epoch", INT16),
            Field("verify_only", BOOL),
            Field("topics", Array(_TOPIC_PARTITIONS)),
        )), "4+"),
        Field("v3_and_below_transactional_id", STRING, "0-3"),
        Field("v3_and_below_producer_id", INT64, "0-3"),
        Field("v3_and_below_producer_epoch", INT16, "0-3"),
        Field("v3_and_below_topics", Array(_TOPIC_PARTITIONS), "0-3"),
    ),
)

ADD_PARTITIONS_TO_TXN_RESPONSE = Message(
    "AddPartitionsToTxnResponse", valid="0-4", flexible="3+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, "4+"),
        Field("results_by_transaction", Array(Struct(
            Field("transactional_id", STRING),
            Field("topic_results", Array(_TOPIC_RESULTS)),
        )), "4+"),
        Field("results_by_topic_v3_and_below", Array(_TOPIC_RESULTS), "0-3"),
    ),
)

ADD_OFFSETS_TO_TXN_REQUEST = Message(
    "AddOffsetsToTxnRequest", valid="0-4", flexible="3+", fields=(
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("group_id", STRING),
    ),
)

ADD_OFFSETS_TO_TXN_RESPONSE = Message(
    "AddOffsetsToTxnResponse", valid="0-4", flexible="3+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
    ),
)

END_TXN_REQUEST = Message(
    "EndTxnRequest", valid="0-4", flexible="3+", fields=(
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("committed", BOOL),
    ),
)

END_TXN_RESPONSE = Message(
    "EndTxnResponse", valid="0-4", flexible="3+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
    ),
)

WRITE_TXN_MARKERS_REQUEST = Message(
    "WriteTxnMarkersRequest", valid="0-1", flexible="1+", fields=(
        Field("markers", Array(Struct(
            Field("producer_id", INT64),
            Field("producer_epoch", INT16),
            Field("transaction_result", BOOL),
            Field("topics", Array(Struct(
                Field("name", STRING),
                Field("partition_indexes", Array(INT32)),
            ))),
            Field("coordinator_epoch", INT32),
        ))),
    ),
)

WRITE_TXN_MARKERS_RESPONSE = Message(
    "WriteTxnMarkersResponse", valid="0-1", flexible="1+", fields=(
        Field("markers", Array(Struct(
            Field("producer_id", INT64),
            Field("topics", Array(Struct(
                Field("name", STRING),
                Field("partitions", Array(Struct(
                    Field("partition_index", INT32),
                    Field("error_code", INT16),
                ))),
            ))),
        ))),
    ),
)

TXN_OFFSET_COMMIT_REQUEST = Message(
    "TxnOffsetCommitRequest", valid="0-4", flexible="3+", fields=(
        Field("transactional_id", STRING),
        Field("group_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("generation_id", INT32, "3+", default=-1),
        Field("member_id", STRING, "3+", default=""),
        Field("group_instance_id", STRING, "3+", nullable="3+"),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("committed_offset", INT64),
                Field("committed_leader_epoch", INT32, "2+", default=-1),
                Field("committed_metadata", STRING, nullable="0+"),
            ))),
        ))),
    ),
)

TXN_OFFSET_COMMIT_RESPONSE = Message(
    "TxnOffsetCommitResponse", valid="0-4", flexible="3+", fields=(
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ))),
        ))),
    ),
)

DESCRIBE_PRODUCERS_REQUEST = Message(
    "DescribeProducersRequest", valid="0", flexible="0+", fields=(
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partition_indexes", Array(INT32)),
        ))),
    ),
)

DESCRIBE_PRODUCERS_RESPONSE = Message(
    "DescribeProducersResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+"),
                Field("active_producers", Array(Struct(
                    Field("producer_id", INT64),
                    Field("producer_epoch", INT32),
                    Field("last_sequence", INT32, default=-1),
                    Field("last_timestamp", INT64, default=-1),
                    Field("coordinator_epoch", INT32),
                    Field("current_txn_start_offset", INT64, default=-1),
                ))),
            ))),
        ))),
    ),
)

DESCRIBE_TRANSACTIONS_REQUEST = Message(
    "DescribeTransactionsRequest", valid="0", flexible="0+", fields=(
        Field("transactional_ids", Array(STRING)),
    ),
)

DESCRIBE_TRANSACTIONS_RESPONSE = Message(
    "DescribeTransactionsResponse", valid="0", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("transaction_states", Array(Struct(
            Field("error_code", INT16),
            Field("transactional_id", STRING),
            Field("transaction_state", STRING),
            Field("transaction_timeout_ms", INT32),
            Field("transaction_start_time_ms", INT64),
            Field("producer_id", INT64),
            Field("producer_epoch", INT16),
            Field("topics", Array(Struct(
                Field("topic", STRING),
                Field("partitions", Array(INT32)),
            ))),
        ))),
    ),
)

LIST_TRANSACTIONS_REQUEST = Message(
    "ListTransactionsRequest", valid="0-1", flexible="0+", fields=(
        Field("state_filters", Array(STRING)),
        Field("producer_id_filters", Array(INT64)),
        Field("duration_filter", INT64, "1+", default=-1),
    ),
)

LIST_TRANSACTIONS_RESPONSE = Message(
    "ListTransactionsResponse", valid="0-1", flexible="0+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("unknown_state_filters", Array(STRING)),
        Field("transaction_states", Array(Struct(
            Field("transactional_id", STRING),
            Field("producer_id", INT64),
            Field("transaction_state", STRING),
        ))),
    ),
)
