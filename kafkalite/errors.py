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


class UnknownConfigError(ConfigError):
    """A configuration key the client does not take, with the nearest key it does take
    (``suggestion``, None when nothing is close): ``unknown producer config 'linger_mss':
    did you mean linger_ms?``."""

    def __init__(self, key: str, what: str, suggestion: str | None) -> None:
        KafkaError.__init__(self, f"unknown {what} {key!r}" + (
            f": did you mean {suggestion}?" if suggestion else ""))
        self.key = key
        self.what = what
        self.suggestion = suggestion


class KafkaTimeoutError(KafkaError):
    """An operation did not complete within its timeout."""

    retriable = True


class IncompatibleBrokerVersionError(KafkaError):
    """The broker supports no version of an API that this client also supports."""


class KafkaConnectionError(KafkaError):
    """A broker could not be reached or the connection broke."""

    retriable = True
    invalid_metadata = True


class BrokerUnreachableError(KafkaTimeoutError, KafkaConnectionError):
    """A timeout while no broker could be reached: the message names each address that
    failed and its last error ("connection refused at localhost:39099", a failed TLS
    handshake, ...). Both a timeout and a connection error, so either ``except`` catches
    it; retrying the same call with the same settings usually fails the same way."""


# Re-export the broker error classes last: kafkalite.protocol.errors imports KafkaError from here.
from kafkalite.protocol.errors import *  # noqa


class MessageSizeTooLargeError(MessageTooLargeError):  # noqa: F405 (from the re-export above)
    """A record too large for ``max_request_size`` (or ``buffer_memory``): rejected by the
    producer before it reaches a batch. A subclass of the broker's MESSAGE_TOO_LARGE error, so
    one ``except`` catches both."""


class IllegalStateError(KafkaError, RuntimeError):
    """The call does not fit the client's state (for example subscribe after assign)."""


class IllegalArgumentError(KafkaError, ValueError):
    """An argument outside what the call accepts."""


class NoOffsetForPartitionError(KafkaError):
    """A partition has no committed offset and ``auto_offset_reset`` is ``'none'``."""


class UnsupportedFeatureError(KafkaError):
    """A setting or call that asks for something kafkalite does not implement (yet); the
    message names the setting or call."""


# -- kafka-python's names --------------------------------------------------------------------
# Programs written for kafka-python catch errors by its names; each name below is the same
# class as ours (an alias), or, for kafka-python's own client-side conditions, a small class.

NotLeaderForPartitionError = NotLeaderOrFollowerError  # noqa: F405
InvalidReplicationAssignmentError = InvalidReplicaAssignmentError  # noqa: F405
InvalidConfigurationError = InvalidConfigError  # noqa: F405
InvalidFetchRequestError = InvalidFetchSizeError  # noqa: F405
NetworkExceptionError = NetworkError  # noqa: F405
CorruptRecordException = CorruptMessageError  # noqa: F405
IncompatibleBrokerVersion = UnsupportedVersionError  # noqa: F405
UnknownError = UnknownServerError  # noqa: F405
KafkaConfigurationError = ConfigError
KafkaProtocolError = ProtocolDecodeError


class NoError(BrokerResponseError):  # noqa: F405
    """Error code 0, for code that looks errors up by code; never raised."""

    errno = 0
    message = "No error."


class AuthorizationError(BrokerResponseError):  # noqa: F405
    """kafka-python's common base of authorization failures; kafkalite raises the specific
    ``*AuthorizationFailedError`` classes, which carry the broker's error code."""


class RetriableError(KafkaError):
    """kafka-python's base of retriable errors. kafkalite marks retriable errors with the
    ``retriable`` flag instead: test ``exc.retriable`` rather than catching this class."""

    retriable = True


class InvalidMetadataError(RetriableError):
    """kafka-python's base of stale-metadata errors; kafkalite uses ``exc.invalid_metadata``."""

    invalid_metadata = True


class StaleMetadata(InvalidMetadataError):
    """Cluster metadata too old to route a request."""


class NodeNotReadyError(RetriableError):
    """A broker connection is not ready for requests yet."""


class TooManyInFlightRequests(RetriableError):
    """A connection already has ``max_in_flight_requests_per_connection`` requests out."""


class MetadataEmptyBrokerList(RetriableError):
    """No broker is known, so metadata cannot be fetched."""


class Cancelled(RetriableError):
    """A request was cancelled before it completed (its connection closed)."""


class CorrelationIdError(KafkaProtocolError, RetriableError):
    """A response whose correlation id does not match the request waiting for it."""


class InvalidReceiveError(KafkaProtocolError):
    """A response frame that cannot be read."""


class UnrecognizedBrokerVersion(KafkaError):
    """The broker's version could not be determined."""


class UnknownBrokerIdError(KafkaError):
    """A broker id not in the cluster metadata."""


class LogTruncationError(KafkaError):
    """The consumer's position is beyond the leader's log after a leader change."""


class QuotaViolationError(KafkaError):
    """A client quota was exceeded."""


class TransactionAbortedError(KafkaError):
    """The transaction a record belonged to was aborted."""


def for_code(code: int) -> type[BrokerResponseError]:  # noqa: F405
    """kafka-python's lookup: the error class of a broker error code (``NoError`` for 0)."""
    return NoError if code == 0 else error_for_code(code)  # noqa: F405


class CommitFailedError(KafkaError):
    """The coordinator refused a commit because this member no longer owns the partitions.

    The group moved to a new generation (a rebalance) without this member, or evicted it:
    its partitions may now belong to another member, which will read from the last
    successful commit. Not retriable; the next ``poll()`` rejoins the group.
    """


kafka_errors: dict[int, type[BrokerResponseError]] = {  # noqa: F405
    0: NoError, **BrokerResponseError._by_code}  # noqa: F405
"""kafka-python's table: error code -> error class, for the codes kafkalite knows."""
