"""kafkalite: a typed, fast Kafka client SDK that speaks the real Apache Kafka wire protocol.

The top-level names load lazily (PEP 562): ``import kafkalite`` costs almost nothing, and a
program that only uses ``kafkalite.protocol`` or ``kafkalite.records`` (the broker does)
never loads the producer, the consumer or msgpack. ``from kafkalite import Producer`` and
``kafkalite.Producer`` load the module that defines the name on first use.

kafka-python's top-level names (``KafkaProducer``, ``KafkaConsumer``, ``KafkaAdminClient``,
the serializer classes, ...) are the same objects as ours, so that a kafka-python program
runs after its imports are rewritten (docs/migration.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module that defines it; nothing here is imported until it is asked for.
_EXPORTS: dict[str, str] = {
    "AdminClient": "kafkalite.admin",
    "KafkaAdminClient": "kafkalite.admin",
    "NewPartitions": "kafkalite.admin",
    "NewTopic": "kafkalite.admin",
    "OffsetSpec": "kafkalite.admin",
    "Assignor": "kafkalite.consumer",
    "CommitFailedError": "kafkalite.errors",
    "Consumer": "kafkalite.consumer",
    "KafkaConsumer": "kafkalite.consumer",
    "ConsumerRebalanceListener": "kafkalite.consumer",
    "AsyncConsumerRebalanceListener": "kafkalite.consumer",
    "MessageSizeTooLargeError": "kafkalite.producer",
    "Partitioner": "kafkalite.producer",
    "Producer": "kafkalite.producer",
    "KafkaProducer": "kafkalite.producer",
    "ConsumerGroupMetadata": "kafkalite.structs",
    "ConsumerRecord": "kafkalite.structs",
    "IsolationLevel": "kafkalite.structs",
    "OffsetAndMetadata": "kafkalite.structs",
    "RecordMetadata": "kafkalite.structs",
    "TopicPartition": "kafkalite.structs",
    "TopicPartitionReplica": "kafkalite.structs",
    "AcknowledgeType": "kafkalite.share",
    "ShareConsumer": "kafkalite.share",
    "ShareRecord": "kafkalite.share",
    "Serializer": "kafkalite.serializer",
    "Deserializer": "kafkalite.serializer",
    "DefaultSerializer": "kafkalite.serializer",
    "JsonSerializer": "kafkalite.serializer",
}

__all__ = [
    "AcknowledgeType",
    "AdminClient",
    "Assignor",
    "AsyncConsumerRebalanceListener",
    "CommitFailedError",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "DefaultSerializer",
    "Deserializer",
    "IsolationLevel",
    "JsonSerializer",
    "KafkaAdminClient",
    "KafkaConsumer",
    "KafkaProducer",
    "MessageSizeTooLargeError",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetSpec",
    "Partitioner",
    "Producer",
    "RecordMetadata",
    "Serializer",
    "ShareConsumer",
    "ShareRecord",
    "TopicPartition",
    "TopicPartitionReplica",
    "errors",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        if name == "errors":
            return importlib.import_module("kafkalite.errors")
        raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # static checkers and IDEs see the names eagerly
    from kafkalite import errors
    from kafkalite.admin import (
        AdminClient,
        KafkaAdminClient,
        NewPartitions,
        NewTopic,
        OffsetSpec,
    )
    from kafkalite.consumer import (
        Assignor,
        AsyncConsumerRebalanceListener,
        Consumer,
        ConsumerRebalanceListener,
        KafkaConsumer,
    )
    from kafkalite.errors import CommitFailedError
    from kafkalite.producer import (
        KafkaProducer,
        MessageSizeTooLargeError,
        Partitioner,
        Producer,
    )
    from kafkalite.serializer import (
        DefaultSerializer,
        Deserializer,
        JsonSerializer,
        Serializer,
    )
    from kafkalite.structs import (
        ConsumerGroupMetadata,
        ConsumerRecord,
        IsolationLevel,
        OffsetAndMetadata,
        RecordMetadata,
        TopicPartition,
        TopicPartitionReplica,
    )
