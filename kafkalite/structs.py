"""Public value types of the client SDK.

Shaped like kafka-python's ``kafka.structs`` (same names, same leading fields) so code
migrating from it keeps working, but typed and immutable: they are ``NamedTuple`` s, hashable
and cheap, and safe to share between the client's I/O thread and user threads.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

Header = tuple[str, bytes | None]
"""A record header: a string key and a nullable byte value, as on the wire."""


class TopicPartition(NamedTuple):
    """One partition of one topic: the unit of ordering, assignment and offsets."""

    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A committed (or to-be-committed) position: the offset of the next record to read."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


class RecordMetadata(NamedTuple):
    """Where the broker stored a produced record; ``offset`` is -1 when acks=0."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    log_start_offset: int = -1
    serialized_key_size: int = -1
    serialized_value_size: int = -1
    serialized_header_size: int = -1

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class ConsumerRecord(NamedTuple):
    """One record as a consumer returns it, after deserialization of key and value.

    ``timestamp_type`` is 0 for CreateTime and 1 for LogAppendTime (Kafka's attribute bit).
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: tuple[Header, ...] = ()
    leader_epoch: int = -1
    serialized_key_size: int = -1
    serialized_value_size: int = -1
    serialized_header_size: int = -1

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class BrokerMetadata(NamedTuple):
    """A broker as the Metadata response describes it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


class PartitionMetadata(NamedTuple):
    """One partition's leadership as the Metadata response describes it.

    ``leader`` is -1 while no leader is known (an election is in progress); ``error`` is the
    partition's Kafka error code, 0 when none.
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: int = 0
    offline_replicas: tuple[int, ...] = ()

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class TopicPartitionReplica(NamedTuple):
    """One replica of one partition: the unit ``describe_log_dirs`` and reassignments use."""

    topic: str
    partition: int
    broker_id: int


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's place in its group, as ``Consumer.group_metadata()`` reports it.

    ``state`` is ``'<unjoined>'``, ``'<rebalancing>'`` or ``'<stable>'`` (kafka-python's
    spelling); ``group_id`` is None for a consumer outside any group.
    """

    group_id: str | None
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    state: str = "<unjoined>"


class MemberState:
    """kafka-python's names for :attr:`ConsumerGroupMetadata.state`."""

    UNJOINED = "<unjoined>"
    REBALANCING = "<rebalancing>"
    STABLE = "<stable>"


class OffsetAndTimestamp(NamedTuple):
    """The first offset whose timestamp is at or after the one asked for."""

    offset: int
    timestamp: int


class IsolationLevel(enum.IntEnum):
    """Which records a read sees: all (READ_UNCOMMITTED) or only committed transactions'."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1
