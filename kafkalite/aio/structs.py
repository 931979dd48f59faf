"""aiokafka's value types, with its field names and order.

``TopicPartition`` is the SDK's own (the same two fields), so partitions move between the
threaded and the asyncio API unchanged. aiokafka's ``RecordMetadata`` carries the
``topic_partition`` and ``timestamp_type`` fields and its ``ConsumerRecord`` is a mutable
dataclass with ``checksum`` (always None: RecordBatch v2 has no per-record checksum).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from kafkalite.structs import TopicPartition

__all__ = ["BrokerMetadata", "ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp",
           "PartitionMetadata", "RecordMetadata", "TopicPartition"]


class BrokerMetadata(NamedTuple):
    nodeId: int | str
    host: str
    port: int
    rack: str | None


class PartitionMetadata(NamedTuple):
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    error: Exception | None


class RecordMetadata(NamedTuple):
    """Where the broker stored a record sent by :class:`~kafkalite.aio.AIOKafkaProducer`."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int | None
    timestamp_type: int
    log_start_offset: int | None


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int | None


@dataclass(slots=True)
class ConsumerRecord:
    """One record as :class:`~kafkalite.aio.AIOKafkaConsumer` returns it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    headers: Sequence[tuple[str, bytes]]
