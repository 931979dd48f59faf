"""The asyncio producer's batches: records gathered per partition, each with its future.

A :class:`ProducerBatch` wraps the SDK's :class:`~kafkalite.records.builder.BatchBuilder`
(the compiled codec encodes each record as it is appended) and the :class:`asyncio.Future`
of every record in it; :class:`BatchBuilder` is aiokafka's ``create_batch()`` object, whose
records go out together in one batch through ``send_batch``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from kafkalite.aio.structs import RecordMetadata
from kafkalite.records.builder import BatchBuilder as RecordsBuilder
from kafkalite.records.compression import NONE
from kafkalite.structs import TopicPartition

Serializer = Callable[[Any], bytes] | None
COMPRESS_OFF_LOOP_BYTES = 64 * 1024
"""A compressed batch at least this large is built in the loop's executor, so its
compression does not hold up the event loop."""


class BatchAppend(NamedTuple):
    """What aiokafka's ``BatchBuilder.append`` returns for an accepted record."""

    offset: int
    timestamp: int
    crc: int | None
    size: int


def serialize(serializer: Serializer, data: Any) -> bytes | None:
    if data is None or serializer is None:
        return data
    return serializer(data)


class ProducerBatch:
    """Records for one partition, with each record's future and timestamp (two parallel
    lists rather than a tuple per record: fewer objects for the garbage collector to scan),
    or one future for the whole batch (``send_batch``)."""

    __slots__ = ("append", "builder", "created", "data", "record_futures",
                 "record_timestamps", "tp", "whole_batch")

    def __init__(self, tp: TopicPartition, builder: RecordsBuilder, created: float) -> None:
        self.tp = tp
        self.builder = builder
        self.append: Callable[..., bool] = getattr(builder, "writer", builder).append
        """``append(timestamp, key, value, headers)``: the v2 builder's records writer
        itself (the compiled one when built), one call less on every send."""
        self.created = created
        self.record_futures: list[asyncio.Future[RecordMetadata]] = []
        self.record_timestamps: list[int] = []
        self.whole_batch: asyncio.Future[RecordMetadata] | None = None
        self.data: bytes | None = None

    @property
    def record_count(self) -> int:
        return self.builder.record_count

    async def seal(self) -> bytes:
        """The batch's bytes, built once (off the loop when compression is heavy)."""
        if self.data is None:
            builder = self.builder
            if builder.compression != NONE and builder.size_in_bytes >= COMPRESS_OFF_LOOP_BYTES:
                self.data = await asyncio.get_running_loop().run_in_executor(None, builder.build)
            else:
                self.data = builder.build()
        return self.data

    def done(self, base_offset: int, log_append_time: int, log_start_offset: int) -> None:
        topic, partition = tp = self.tp
        append_time = log_append_time != -1
        new = tuple.__new__  # the NamedTuple's own __new__ is a Python function: 2x slower
        offset = base_offset
        for future, timestamp in zip(self.record_futures, self.record_timestamps,
                                     strict=True):
            if not future.done():
                future.set_result(new(RecordMetadata, (
                    topic, partition, tp, offset,
                    log_append_time if append_time else timestamp, int(append_time),
                    log_start_offset)))
            if base_offset >= 0:
                offset += 1
        if self.whole_batch is not None and not self.whole_batch.done():
            self.whole_batch.set_result(RecordMetadata(
                topic, partition, tp, base_offset, log_append_time if append_time else None,
                int(append_time), log_start_offset))

    def failure(self, error: BaseException) -> None:
        for future in self.record_futures:
            if not future.done():
                future.set_exception(error)
        if self.whole_batch is not None and not self.whole_batch.done():
            self.whole_batch.set_exception(error)


class BatchBuilder:
    """aiokafka's batch from ``create_batch()``: append records until it is full, then
    hand it to ``send_batch``."""

    def __init__(self, builder: RecordsBuilder, key_serializer: Serializer,
                 value_serializer: Serializer, clock: Callable[[], int]) -> None:
        self._builder = builder
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._clock = clock
        self._closed = False

    def append(self, *, timestamp: int | None, key: Any, value: Any,
               headers: Sequence[tuple[str, bytes]] = ()) -> BatchAppend | None:
        """Add a record; None (nothing added) when the batch is full or closed."""
        if self._closed:
            return None
        key_bytes = serialize(self._key_serializer, key)
        value_bytes = serialize(self._value_serializer, value)
        when = self._clock() if timestamp is None else timestamp
        before = self._builder.size_in_bytes
        offset = self._builder.record_count
        if not self._builder.append(when, key_bytes, value_bytes, list(headers) or None):
            return None
        return BatchAppend(offset, when, None, self._builder.size_in_bytes - before)

    def close(self) -> None:
        """No more records: the batch is ready to be sent."""
        self._closed = True

    def size(self) -> int:
        """The batch's size in bytes so far (uncompressed)."""
        return self._builder.size_in_bytes

    def record_count(self) -> int:
        return self._builder.record_count

    @property
    def builder(self) -> RecordsBuilder:
        self._closed = True
        return self._builder
