"""The producer: partitioners, record accumulator and sender."""

from kafkalite.producer.batch import FutureRecordMetadata
from kafkalite.producer.partitioners import (
    DefaultPartitioner,
    Partitioner,
    RandomPartitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
)
from kafkalite.producer.producer import MessageSizeTooLargeError, Producer

__all__ = [
    "DefaultPartitioner",
    "FutureRecordMetadata",
    "MessageSizeTooLargeError",
    "Partitioner",
    "Producer",
    "RandomPartitioner",
    "RoundRobinPartitioner",
    "UniformStickyPartitioner",
]
