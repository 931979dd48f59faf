"""kafkalite: a typed, fast Kafka client SDK that speaks the real Kafka wire protocol."""

from kafkalite import errors
from kafkalite.admin import AdminClient, NewPartitions, NewTopic
from kafkalite.consumer import (
    Assignor,
    CommitFailedError,
    Consumer,
    ConsumerRebalanceListener,
)
from kafkalite.producer import MessageSizeTooLargeError, Partitioner, Producer
from kafkalite.structs import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition

__version__ = "0.1.0"

__all__ = [
    "AdminClient",
    "Assignor",
    "CommitFailedError",
    "Consumer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "MessageSizeTooLargeError",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "Partitioner",
    "Producer",
    "RecordMetadata",
    "TopicPartition",
    "errors",
]
