"""kafkalite: a typed, fast Kafka client SDK that speaks the real Kafka wire protocol.

The public names load on first use (PEP 562), so code that needs only the sans-IO layers
(``kafkalite.protocol``, ``kafkalite.records``; the broker) never imports the producer,
the consumer or their dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalite import errors
    from kafkalite.admin import AdminClient, NewPartitions, NewTopic
    from kafkalite.consumer import (
        Assignor,
        CommitFailedError,
        Consumer,
        ConsumerRebalanceListener,
    )
    from kafkalite.producer import MessageSizeTooLargeError, Partitioner, Producer
    from kafkalite.structs import (
        ConsumerRecord,
        OffsetAndMetadata,
        RecordMetadata,
        TopicPartition,
    )

__version__ = "0.1.0"

_HOMES = {
    "AdminClient": "kafkalite.admin",
    "NewPartitions": "kafkalite.admin",
    "NewTopic": "kafkalite.admin",
    "Assignor": "kafkalite.consumer",
    "CommitFailedError": "kafkalite.consumer",
    "Consumer": "kafkalite.consumer",
    "ConsumerRebalanceListener": "kafkalite.consumer",
    "MessageSizeTooLargeError": "kafkalite.producer",
    "Partitioner": "kafkalite.producer",
    "Producer": "kafkalite.producer",
    "ConsumerRecord": "kafkalite.structs",
    "OffsetAndMetadata": "kafkalite.structs",
    "RecordMetadata": "kafkalite.structs",
    "TopicPartition": "kafkalite.structs",
}

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


def __getattr__(name: str) -> Any:
    if name == "errors":
        return importlib.import_module("kafkalite.errors")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES, "errors"])
