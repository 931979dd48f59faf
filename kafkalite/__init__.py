"""kafkalite: a typed, fast Kafka client SDK that speaks the real Kafka wire protocol."""

from kafkalite import errors
from kafkalite.producer import MessageSizeTooLargeError, Partitioner, Producer
from kafkalite.structs import RecordMetadata, TopicPartition

__version__ = "0.1.0"

__all__ = [
    "MessageSizeTooLargeError",
    "Partitioner",
    "Producer",
    "RecordMetadata",
    "TopicPartition",
    "errors",
]
