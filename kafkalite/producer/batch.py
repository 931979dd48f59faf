"""One partition's batch of records on its way to the broker, and the per-record futures.

A :class:`ProducerBatch` wraps a :class:`~kafkalite.records.BatchBuilder` and one
:class:`~kafkalite.client.future.Future` for the whole batch. The records' futures
(:class:`FutureRecordMetadata`) are thin views on that one future plus the record's position,
so ``send()`` allocates no lock or event per record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from kafkalite.client.future import Future
from kafkalite.records import BatchBuilder
from kafkalite.structs import Header, RecordMetadata, TopicPartition


class BatchResult(NamedTuple):
    """What the broker said about a batch: where it starts (-1 with acks=0)."""

    base_offset: int
    log_append_time_ms: int = -1
    log_start_offset: int = -1


class FutureRecordMetadata:
    """The future ``Producer.send`` returns; ``get()`` gives a :class:`RecordMetadata`."""

    __slots__ = (
        "_future",
        "_key_size",
        "_relative_offset",
        "_timestamp",
        "_tp",
        "_value_size",
    )

    def __init__(self, tp: TopicPartition, future: Future[BatchResult], relative_offset: int,
                 timestamp_ms: int, key_size: int, value_size: int) -> None:
        self._tp = tp
        self._future = future
        self._relative_offset = relative_offset
        self._timestamp = timestamp_ms
        self._key_size = key_size
        self._value_size = value_size

    def _metadata(self, result: BatchResult) -> RecordMetadata:
        tp = self._tp
        offset = -1 if result.base_offset < 0 else result.base_offset + self._relative_offset
        timestamp = self._timestamp if result.log_append_time_ms < 0 else result.log_append_time_ms
        return RecordMetadata(tp.topic, tp.partition, offset, timestamp, result.log_start_offset,
                              self._key_size, self._value_size, -1)

    def is_done(self) -> bool:
        return self._future.is_done()

    def succeeded(self) -> bool:
        return self._future.succeeded()

    def failed(self) -> bool:
        return self._future.failed()

    @property
    def exception(self) -> BaseException | None:
        return self._future.exception

    @property
    def value(self) -> RecordMetadata:
        return self._metadata(self._future.value)

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """Block until the broker acknowledged the record; raise its error if it failed."""
        return self._metadata(self._future.get(timeout))

    def add_callback(self, callback: Callable[..., Any], *args: Any) -> FutureRecordMetadata:
        """``callback(*args, record_metadata)`` on success, on the producer's I/O thread."""
        self._future.add_callback(lambda result: callback(*args, self._metadata(result)))
        return self

    def add_errback(self, errback: Callable[..., Any], *args: Any) -> FutureRecordMetadata:
        """``errback(*args, exception)`` on failure, on the producer's I/O thread."""
        self._future.add_errback(errback, *args)
        return self


def failed_record_future(tp: TopicPartition, error: BaseException) -> FutureRecordMetadata:
    """The future of a record rejected before batching (too large): already failed."""
    future: Future[BatchResult] = Future()
    future.failure(error)
    return FutureRecordMetadata(tp, future, 0, -1, -1, -1)


class ProducerBatch:
    """Records for one partition; built (and compressed) once, when drained for sending."""

    __slots__ = ("attempts", "builder", "created", "future", "is_full", "records",
                 "reserved_bytes", "retry_at", "tp")

    def __init__(self, tp: TopicPartition, builder: BatchBuilder, created: float,
                 reserved_bytes: int) -> None:
        self.tp = tp
        self.builder = builder
        self.created = created
        self.reserved_bytes = reserved_bytes
        self.future: Future[BatchResult] = Future()
        self.is_full = False
        self.records: bytes | None = None
        self.attempts = 0
        self.retry_at = 0.0

    @property
    def record_count(self) -> int:
        return self.builder.record_count

    @property
    def estimated_size(self) -> int:
        return len(self.records) if self.records is not None else self.builder.size_in_bytes

    @property
    def is_closed(self) -> bool:
        return self.records is not None

    def try_append(self, timestamp_ms: int, key: bytes | None, value: bytes | None,
                   headers: Sequence[Header] | None) -> FutureRecordMetadata | None:
        """Add a record; None (and the batch marked full) when it does not fit."""
        if self.is_full:
            return None
        builder = self.builder
        count = builder.record_count
        if not builder.append(timestamp_ms, key, value, headers):
            self.is_full = True
            return None
        return FutureRecordMetadata(self.tp, self.future, count, timestamp_ms,
                                    -1 if key is None else len(key),
                                    -1 if value is None else len(value))

    def set_producer_state(self, producer_id: int, producer_epoch: int,
                           base_sequence: int) -> None:
        """Stamp the idempotence fields; must happen before :meth:`close`."""
        builder: Any = self.builder
        builder.producer_id = producer_id
        builder.producer_epoch = producer_epoch
        builder.base_sequence = base_sequence

    @property
    def producer_identity(self) -> tuple[int, int]:
        """(producer id, epoch) stamped by :meth:`set_producer_state`; (-1, -1) if none."""
        builder: Any = self.builder
        return getattr(builder, "producer_id", -1), getattr(builder, "producer_epoch", -1)

    def close(self) -> bytes:
        """Build the batch bytes once; later calls (retries) return the same bytes."""
        if self.records is None:
            self.is_full = True
            self.records = self.builder.build()
        return self.records

    def __repr__(self) -> str:
        return (f"<ProducerBatch {self.tp.topic}-{self.tp.partition} "
                f"records={self.record_count} attempts={self.attempts}>")
