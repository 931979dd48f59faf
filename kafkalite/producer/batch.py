"""One partition's batch of records on its way to the broker, and the per-record futures.

A :class:`ProducerBatch` wraps a :class:`~kafkalite.records.BatchBuilder` and one
:class:`~kafkalite.client.future.Future` for the whole batch. The records' futures
(:class:`FutureRecordMetadata`) are thin views on that one future plus the record's position,
so ``send()`` allocates no lock or event per record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from kafkalite.client.future import Future
from kafkalite.records import BatchBuilder, RecordBatchBuilder
from kafkalite.records.builder import ATOMIC_APPENDS
from kafkalite.structs import Header, RecordMetadata, TopicPartition


class BatchResult(NamedTuple):
    """What the broker said about a batch: where it starts (-1 with acks=0)."""

    base_offset: int
    log_append_time_ms: int = -1
    log_start_offset: int = -1


class FutureRecordMetadata(tuple):
    """The future ``Producer.send`` returns; ``get()`` gives a :class:`RecordMetadata`.

    A tuple ``(tp, batch future, relative offset, timestamp, key size, value size)``: the
    producer builds one per record with ``tuple.__new__``, the cheapest object Python has.
    """

    __slots__ = ()

    def __new__(cls, tp: TopicPartition, future: Future[BatchResult], relative_offset: int,
                timestamp_ms: int, key_size: int, value_size: int) -> FutureRecordMetadata:
        return tuple.__new__(cls, (tp, future, relative_offset, timestamp_ms, key_size,
                                   value_size))

    _tp: TopicPartition = property(itemgetter(0))  # type: ignore[assignment]
    _future: Future[BatchResult] = property(itemgetter(1))  # type: ignore[assignment]

    @property
    def opens_batch(self) -> bool:
        """True for the first record of its batch: a linger clock started, and any earlier
        batch of the partition is full, so the sender should look again."""
        return self[2] == 0

    def _metadata(self, result: BatchResult) -> RecordMetadata:
        tp, _, relative_offset, timestamp, key_size, value_size = self
        offset = -1 if result.base_offset < 0 else result.base_offset + relative_offset
        if result.log_append_time_ms >= 0:
            timestamp = result.log_append_time_ms
        return RecordMetadata(tp.topic, tp.partition, offset, timestamp, result.log_start_offset,
                              key_size, value_size, -1)

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


class BatchMetadata(NamedTuple):
    """Where a run of records from ``Producer.send_batch`` landed: records
    ``base_offset .. base_offset + record_count - 1`` of one partition, in input order."""

    topic: str
    partition: int
    base_offset: int
    """-1 with ``acks=0``."""
    record_count: int
    log_append_time_ms: int = -1
    """The broker's timestamp for the records when the topic uses LogAppendTime, else -1."""


class FutureBatchMetadata:
    """One future of ``Producer.send_batch``: a run of consecutive records in one batch;
    ``get()`` gives a :class:`BatchMetadata`."""

    __slots__ = ("_future", "_start", "record_count", "tp")

    def __init__(self, tp: TopicPartition, future: Future[BatchResult], start: int,
                 record_count: int) -> None:
        self.tp = tp
        self._future = future
        self._start = start
        self.record_count = record_count

    def _metadata(self, result: BatchResult) -> BatchMetadata:
        offset = -1 if result.base_offset < 0 else result.base_offset + self._start
        return BatchMetadata(self.tp.topic, self.tp.partition, offset, self.record_count,
                             result.log_append_time_ms)

    def is_done(self) -> bool:
        return self._future.is_done()

    def succeeded(self) -> bool:
        return self._future.succeeded()

    def failed(self) -> bool:
        return self._future.failed()

    @property
    def exception(self) -> BaseException | None:
        return self._future.exception

    def get(self, timeout: float | None = None) -> BatchMetadata:
        """Block until the broker acknowledged the records; raise the error if they failed."""
        return self._metadata(self._future.get(timeout))

    def add_callback(self, callback: Callable[..., Any], *args: Any) -> FutureBatchMetadata:
        """``callback(*args, batch_metadata)`` on success, on the producer's I/O thread."""
        self._future.add_callback(lambda result: callback(*args, self._metadata(result)))
        return self

    def add_errback(self, errback: Callable[..., Any], *args: Any) -> FutureBatchMetadata:
        """``errback(*args, exception)`` on failure, on the producer's I/O thread."""
        self._future.add_errback(errback, *args)
        return self

    def __repr__(self) -> str:
        return (f"<FutureBatchMetadata {self.tp.topic}-{self.tp.partition} "
                f"records={self.record_count}>")


RecordAppend = Callable[[int, bytes | None, bytes | None, Sequence[Header] | None],
                        "FutureRecordMetadata | None"]
"""What :attr:`ProducerBatch.append` is."""


def failed_record_future(tp: TopicPartition, error: BaseException) -> FutureRecordMetadata:
    """The future of a record rejected before batching (too large): already failed."""
    future: Future[BatchResult] = Future()
    future.failure(error)
    return FutureRecordMetadata(tp, future, -1, -1, -1, -1)  # in no batch


class ProducerBatch:
    """Records for one partition; built (and compressed) once: when it fills up (see
    ``RecordAccumulator.build_when_full``) or else when drained for sending."""

    __slots__ = ("append", "append_shared", "attempts", "builder", "created", "future",
                 "is_full", "records", "reserved_bytes", "retry_at", "tp")

    def __init__(self, tp: TopicPartition, builder: BatchBuilder, created: float,
                 reserved_bytes: int) -> None:
        self.tp = tp
        self.builder = builder
        self.created = created
        self.reserved_bytes = reserved_bytes
        self.future: Future[BatchResult] = Future()
        self.is_full = False
        self.append_shared = False
        """True once :attr:`lock_free_append` was handed out: records may arrive without
        the accumulator's lock until the batch is sealed."""
        self.records: bytes | None = None
        self.attempts = 0
        self.retry_at = 0.0
        self.append: RecordAppend
        """``append(timestamp_ms, key, value, headers)``: add a record and return its
        future, or None when it does not fit (the caller then marks the batch full). For
        v2 it is the records writer's ``append_future``: one call per record, no Python
        frame (see :mod:`kafkalite.records.builder`)."""
        if isinstance(builder, RecordBatchBuilder):
            builder.writer.bind_futures(FutureRecordMetadata, tp, self.future)
            self.append = builder.writer.append_future
        else:
            self.append = self._append_with_builder

    @property
    def record_count(self) -> int:
        return self.builder.record_count

    @property
    def estimated_size(self) -> int:
        return len(self.records) if self.records is not None else self.builder.size_in_bytes

    @property
    def is_closed(self) -> bool:
        return self.records is not None

    @property
    def lock_free_append(self) -> RecordAppend | None:
        """:attr:`append` when it may run without the accumulator's lock: the compiled
        writer's ``append_future`` (see :data:`~kafkalite.records.builder.ATOMIC_APPENDS`)
        of a batch not sealed yet; None otherwise."""
        if ATOMIC_APPENDS and not self.is_full and isinstance(self.builder, RecordBatchBuilder):
            return self.append
        return None

    def seal(self) -> None:
        """Take no more records (full, drained, expired or aborted). Seals the writer too,
        so an append that skipped the lock declines from here on."""
        self.is_full = True
        if isinstance(self.builder, RecordBatchBuilder):
            self.builder.writer.seal()

    def _append_with_builder(self, timestamp_ms: int, key: bytes | None,
                             value: bytes | None,
                             headers: Sequence[Header] | None) -> FutureRecordMetadata | None:
        """:attr:`append` for the legacy formats' builders."""
        builder = self.builder
        count = builder.record_count
        if not builder.append(timestamp_ms, key, value, headers):
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
            self.seal()
            self.records = self.builder.build()
        return self.records

    def __repr__(self) -> str:
        return (f"<ProducerBatch {self.tp.topic}-{self.tp.partition} "
                f"records={self.record_count} attempts={self.attempts}>")
