"""kafkalite's asyncio API: aiokafka's names, signatures and semantics.

An aiokafka program moves over by rewriting ``from aiokafka import ...`` into
``from kafkalite.aio import ...`` (and ``aiokafka.errors`` into ``kafkalite.aio.errors``).
Everything runs on the event loop over the SDK's sans-IO protocol and record codec: no
threads behind futures. See docs/asyncio.md.
"""

from kafkalite.aio.abc import AbstractTokenProvider, ConsumerRebalanceListener
from kafkalite.aio.consumer import AIOKafkaConsumer
from kafkalite.aio.errors import ConsumerStoppedError, IllegalOperation
from kafkalite.aio.producer import AIOKafkaProducer
from kafkalite.aio.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    RecordMetadata,
    TopicPartition,
)

__all__ = [
    "AIOKafkaConsumer",
    "AIOKafkaProducer",
    "AbstractTokenProvider",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerStoppedError",
    "IllegalOperation",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "RecordMetadata",
    "TopicPartition",
]
