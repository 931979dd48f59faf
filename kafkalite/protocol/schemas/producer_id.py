"""InitProducerId (key 22): the producer id and epoch for idempotent producers.

v3 adds the producer's current id and epoch, so a producer can ask for its epoch to be
bumped (KIP-360) instead of getting a new identity; v4 allows PRODUCER_FENCED in answers,
v5 TRANSACTION_ABORTABLE (KIP-890).
"""

from kafkalite.protocol.primitives import INT16, INT32, INT64, STRING
from kafkalite.protocol.schema import Field, Message

INIT_PRODUCER_ID_REQUEST = Message(
    "InitProducerIdRequest", valid="0-5", flexible="2+", fields=(
        Field("transactional_id", STRING, nullable="0+"),
        Field("transaction_timeout_ms", INT32),
        Field("producer_id", INT64, "3+", default=-1),
        Field("producer_epoch", INT16, "3+", default=-1),
    ),
)

INIT_PRODUCER_ID_RESPONSE = Message(
    "InitProducerIdResponse", valid="0-5", flexible="2+", fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, default=-1),
        Field("producer_epoch", INT16),
    ),
)
