"""The exception hierarchy every kafkalite layer raises.

Broker error codes (one class per Kafka error code, with the ``retriable`` and
``invalid_metadata`` flags of Kafka's error table) live in
:mod:`kafkalite.protocol.errors` and are re-exported here, so users import every
error from one place: ``from kafkalite.errors import NotLeaderOrFollowerError``.
"""

from __future__ import annotations


class KafkaError(Exception):
    """Base of every error kafkalite raises."""

    retriable: bool = False
    invalid_metadata: bool = False


class ProtocolDecodeError(KafkaError):
    """Bytes that do not parse as the Kafka message they claim to be."""


class CorruptRecordError(KafkaError):
    """A record batch or legacy message that fails its CRC or structure checks.

    The consumer raises it naming the partition (``topic``, ``partition``) and the
    ``offset`` of the bad batch, after returning every record before it; seeking past
    that offset continues.
    """

    def __init__(self, message: str, offset: int | None = None, *, topic: str | None = None,
                 partition: int | None = None) -> None:
        where = "" if offset is None else f" (at offset {offset})"
        if topic is not None:
            where = f" ({topic}-{partition} at offset {offset})"
        super().__init__(f"{message}{where}")
        self.detail = message
        self.offset = offset
        self.topic = topic
        self.partition = partition

    def at(self, topic: str, partition: int, offset: int) -> CorruptRecordError:
        """The same error (same type) placed in a partition, at a batch's offset."""
        return type(self)(self.detail, offset, topic=topic, partition=partition)


class DecompressedSizeError(CorruptRecordError):
    """A compressed batch whose records decompress to more bytes than the reader allows."""

    def __init__(self, limit: int, offset: int | None = None, *, topic: str | None = None,
                 partition: int | None = None) -> None:
        super().__init__(f"records decompress to more than {limit} bytes", offset,
                         topic=topic, partition=partition)
        self.limit = limit

    def at(self, topic: str, partition: int, offset: int) -> CorruptRecordError:
        return DecompressedSizeError(self.limit, offset, topic=topic, partition=partition)


class UnsupportedCodecError(KafkaError):
    """A compression codec id or name kafkalite does not know."""


class ConfigError(KafkaError, ValueError):
    """A configuration key that is unknown or whose value is invalid; names the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


class KafkaTimeoutError(KafkaError):
    """An operation did not complete within its timeout."""

    retriable = True


class IncompatibleBrokerVersionError(KafkaError):
    """The broker supports no version of an API that this client also supports."""


class KafkaConnectionError(KafkaError):
    """A broker could not be reached or the connection broke."""

    retriable = True
    invalid_metadata = True


# Re-export the broker error classes last: kafkalite.protocol.errors imports KafkaError from here.
from kafkalite.protocol.errors import *  # noqa


class MessageSizeTooLargeError(MessageTooLargeError):  # noqa: F405 (from the re-export above)
    """A record too large for ``max_request_size`` (or ``buffer_memory``): rejected by the
    producer before it reaches a batch. A subclass of the broker's MESSAGE_TOO_LARGE error, so
    one ``except`` catches both."""
