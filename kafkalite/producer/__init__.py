"""The producer: partitioners, record accumulator and sender."""

from kafkalite.producer.batch import BatchMetadata, FutureBatchMetadata, FutureRecordMetadata
from kafkalite.producer.partitioners import (
    DefaultPartitioner,
    Partitioner,
    RandomPartitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
)
from kafkalite.producer.producer import KafkaProducer, MessageSizeTooLargeError, Producer

__all__ = [
    "BatchMetadata",
    "DefaultPartitioner",
    "FutureBatchMetadata",
    "FutureRecordMetadata",
    "KafkaProducer",
    "MessageSizeTooLargeError",
    "Partitioner",
    "Producer",
    "RandomPartitioner",
    "RoundRobinPartitioner",
    "UniformStickyPartitioner",
]
