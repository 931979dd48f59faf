"""The record accumulator: per-partition batches between ``send()`` and the sender.

User threads append records; each partition has a queue of batches whose last one is open.
A batch becomes sendable when it is full (``batch_size``), when it is ``linger_ms`` old, or
while a flush or close is in progress. The sender (on the I/O thread) asks which leaders have
sendable data (:meth:`RecordAccumulator.ready`) and drains up to ``max_request_size`` per
leader (:meth:`RecordAccumulator.drain`), which is what makes one Produce request per broker.

``buffer_memory`` bounds the bytes held by unfinished batches; an append that needs a new
batch when the budget is spent blocks up to ``max_block_ms`` (backpressure), then fails with
:class:`~kafkalite.errors.KafkaTimeoutError`. No sockets here: the clock is injectable and the
unit tests drive it by hand.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import NamedTuple, Protocol

from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.producer.batch import (
    FutureBatchMetadata,
    FutureRecordMetadata,
    ProducerBatch,
    RecordAppend,
)
from kafkalite.records import BatchBuilder
from kafkalite.structs import Header, TopicPartition


class LeaderSource(Protocol):
    """What the accumulator needs from the cluster metadata."""

    def leader_for(self, tp: TopicPartition) -> int | None: ...


class ReadyCheck(NamedTuple):
    ready_nodes: set[int]
    next_check: float | None
    """Monotonic time when another batch turns sendable (linger or backoff end)."""
    unknown_leaders: bool


_new = tuple.__new__
_created = attrgetter("created")


class RecordAccumulator:
    """See the module docstring. Thread-safe: one lock guards the queues."""

    def __init__(
        self,
        *,
        batch_size: int,
        max_request_size: int,
        linger_ms: int,
        compression_type: str | None,
        buffer_memory: int,
        max_block_ms: int,
        delivery_timeout_ms: int,
        retry_backoff_ms: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.batch_size = batch_size
        self.bulk_batch_size = max(batch_size, min(max_request_size, buffer_memory))
        """The size :meth:`append_many` fills batches to: the caller already batched, so
        up to what one Produce request carries (``max_request_size``), not ``batch_size``."""
        self.linger = linger_ms / 1000
        self.compression_type = compression_type
        self.max_block = max_block_ms / 1000
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.build_when_full = False
        """Build (compress) a batch in the appending thread the moment it is full, instead
        of in the sender: compressing releases the GIL, and on the I/O thread each release
        costs a wait for a busy application thread to hand it back. Only for batches that
        the sender does not stamp first (not idempotent)."""
        self.magic = 2
        """Record format for new batches; the sender lowers it for brokers older than 0.11."""
        self._clock = clock
        self._lock = threading.Lock()
        self._memory_freed = threading.Condition(self._lock)
        self._free_memory = buffer_memory
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._muted: set[TopicPartition] = set()
        self._flushes = 0
        self._closed = False

    # -- user threads ----------------------------------------------------------------------

    def append(
        self,
        tp: TopicPartition,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        abort_on_new_batch: bool = False,
    ) -> FutureRecordMetadata | None:
        """Add one record to ``tp``'s open batch, opening a new batch when needed; returns
        the record's future, whose ``opens_batch`` tells the sender to look again.

        With ``abort_on_new_batch`` the record is not added when ``tp``'s open batch is full,
        so the caller can let a sticky partitioner move on first (Java's abortOnNewBatch;
        unlike Java, a partition without an open batch simply gets one).
        """
        # The per-record hot path: one lock, one dict lookup and one call that encodes the
        # record into the open batch and returns its future (ProducerBatch.append).
        lock = self._lock
        lock.acquire()
        try:
            if self._closed:
                raise KafkaError("the producer is closed")
            queue = self._batches.get(tp)
            if queue is None:
                queue = self._batches[tp] = deque()
            elif queue:
                batch = queue[-1]
                if not batch.is_full:
                    future = batch.append(timestamp_ms, key, value, headers)
                    if future is not None:
                        return future
                    batch.seal()
                    if self.build_when_full:
                        batch.close()
                if abort_on_new_batch:  # the open batch is full
                    return None
            batch = self._new_batch(tp, key, value)
            try:
                future = batch.append(timestamp_ms, key, value, headers)
            except BaseException:
                self._incomplete.discard(batch)
                self._free_memory += batch.reserved_bytes
                raise
            assert future is not None  # the first record always fits
            queue.append(batch)
            return future
        finally:
            lock.release()

    def lock_free_append(self, tp: TopicPartition) -> RecordAppend | None:
        """The append of ``tp``'s open batch for a caller that will skip this lock (see
        :attr:`ProducerBatch.lock_free_append`): None when there is no open batch or its
        appends need the lock. Every batch leaves the open state through
        :meth:`ProducerBatch.seal` (full, drained, expired, aborted), after which the
        append declines, so a caller holding a stale one just comes back here.
        :meth:`append_many` does not add to a batch whose append went out this way (its
        bulk encoding is not one atomic call): it seals it and opens its own."""
        with self._lock:
            queue = self._batches.get(tp)
            if not queue:
                return None
            batch = queue[-1]
            append = batch.lock_free_append
            if append is not None:
                batch.append_shared = True
            return append

    def append_many(self, tp: TopicPartition, timestamps: Sequence[int],
                    keys: Sequence[bytes | None], values: Sequence[bytes | None],
                    headers: Sequence[Sequence[Header] | None] | None, start: int, stop: int,
                    *, one_batch: bool = False) -> tuple[list[FutureBatchMetadata], int]:
        """Append records ``start..stop-1`` of the parallel sequences to ``tp``: the open
        batch first, then new ones of up to :attr:`bulk_batch_size` bytes. Returns one
        future per batch touched and the index reached, which is short of ``stop`` only
        with ``one_batch`` (stop once a batch is full, so a sticky partitioner can move on).

        The lock is taken once per batch, not for the whole call, so the sender can take
        the first full batches while later ones are still being encoded; the last batch
        stays open (at ``batch_size``, for later records) only if it is still small.
        """
        futures: list[FutureBatchMetadata] = []
        index = start
        while index < stop:
            with self._lock:
                if self._closed:
                    raise KafkaError("the producer is closed")
                queue = self._batches.get(tp)
                if queue is None:
                    queue = self._batches[tp] = deque()
                batch = queue[-1] if queue and not queue[-1].is_full else None
                if batch is not None and batch.append_shared:
                    batch.seal()  # bulk encoding is not atomic: appenders may not share it
                    batch = None
                if batch is None:
                    batch = self._new_batch(tp, keys[index], values[index],
                                            self.bulk_batch_size)
                    queue.append(batch)
                builder = batch.builder
                first = builder.record_count
                reached = builder.append_many(timestamps, keys, values, headers, index, stop)
                if reached > index:
                    futures.append(FutureBatchMetadata(tp, batch.future, first, reached - index))
                if reached < stop or builder.batch_size > self.batch_size:
                    self._shrink(batch)
                index = reached
            if index < stop and one_batch:
                break
        return futures, index

    def _shrink(self, batch: ProducerBatch) -> None:
        """A batch :meth:`append_many` is done with: full, or back to ``batch_size`` (with
        the memory it did not use returned) so that later records batch as usual."""
        builder = batch.builder
        size = builder.size_in_bytes
        if size >= self.batch_size or builder.batch_size <= self.batch_size:
            batch.seal()
        builder.batch_size = min(builder.batch_size, self.batch_size)
        unused = batch.reserved_bytes - max(self.batch_size, size)
        if unused > 0:
            batch.reserved_bytes -= unused
            self._free_memory += unused
            self._memory_freed.notify_all()

    def _new_batch(self, tp: TopicPartition, key: bytes | None, value: bytes | None,
                   batch_size: int | None = None) -> ProducerBatch:
        """A new open batch of ``batch_size`` (default: the configured one) with its memory
        reserved; waits (lock released) for memory."""
        batch_size = batch_size or self.batch_size
        needed = max(batch_size, (len(key) if key else 0) + (len(value) if value else 0))
        if needed > self._free_memory:
            deadline = self._clock() + self.max_block
            while needed > self._free_memory and not self._closed:
                remaining = deadline - self._clock()
                if remaining <= 0 or not self._memory_freed.wait(remaining):
                    if needed <= self._free_memory:
                        break
                    raise KafkaTimeoutError(
                        f"buffer_memory exhausted: no room for a {needed}-byte batch within "
                        f"max_block_ms ({self.max_block * 1000:g} ms)")
        self._free_memory -= needed
        builder = BatchBuilder(self.magic, self.compression_type, batch_size)
        batch = ProducerBatch(tp, builder, self._clock(), needed)
        self._incomplete.add(batch)
        return batch

    def begin_flush(self) -> list[ProducerBatch]:
        """Make every batch sendable now; returns the batches the flush waits for, newest
        first: they are answered last, so waiting for them first finds the others done
        (one sleep, not one wakeup per batch competing with the I/O thread for the GIL)."""
        with self._lock:
            self._flushes += 1
            return sorted(self._incomplete, key=_created, reverse=True)

    def end_flush(self) -> None:
        with self._lock:
            self._flushes -= 1

    def has_undrained(self) -> bool:
        with self._lock:
            return any(self._batches.values())

    # -- I/O thread ------------------------------------------------------------------------

    def close(self) -> None:
        """Refuse new records; what is queued still drains (everything counts as ready)."""
        with self._lock:
            self._closed = True
            self._memory_freed.notify_all()

    def ready(self, cluster: LeaderSource) -> ReadyCheck:
        now = self._clock()
        nodes: set[int] = set()
        next_check: float | None = None
        unknown = False
        with self._lock:
            flushing = self._flushes > 0 or self._closed
            for tp, queue in self._batches.items():
                if not queue or tp in self._muted:
                    continue
                leader = cluster.leader_for(tp)
                if leader is None:
                    unknown = True
                    continue
                if leader in nodes:
                    continue
                batch = queue[0]
                if batch.attempts and now < batch.retry_at:
                    wake = batch.retry_at
                elif flushing or batch.is_full or len(queue) > 1:
                    nodes.add(leader)
                    continue
                else:
                    wake = batch.created + self.linger
                    if now >= wake:
                        nodes.add(leader)
                        continue
                next_check = wake if next_check is None else min(next_check, wake)
        return ReadyCheck(nodes, next_check, unknown)

    def drain(self, cluster: LeaderSource, nodes: Iterable[int],
              max_request_size: int) -> dict[int, list[ProducerBatch]]:
        """Take at most one batch per partition (the oldest) for each node, until a request
        would exceed ``max_request_size``; batches are not built here (see the sender)."""
        now = self._clock()
        wanted = set(nodes)
        drained: dict[int, list[ProducerBatch]] = {}
        sizes: dict[int, int] = {}
        with self._lock:
            for tp, queue in self._batches.items():
                if not queue or tp in self._muted:
                    continue
                leader = cluster.leader_for(tp)
                if leader not in wanted:
                    continue
                assert leader is not None
                batch = queue[0]
                if batch.attempts and now < batch.retry_at:
                    continue
                batch.seal()  # first: its size must not grow after the check below
                size = sizes.get(leader, 0)
                if size and size + batch.estimated_size > max_request_size:
                    continue
                queue.popleft()
                sizes[leader] = size + batch.estimated_size
                drained.setdefault(leader, []).append(batch)
        return drained

    def mute(self, tp: TopicPartition) -> None:
        """Hold back ``tp`` while one of its batches is in flight (ordering guarantee)."""
        self._muted.add(tp)

    def unmute(self, tp: TopicPartition) -> None:
        self._muted.discard(tp)

    def reenqueue(self, batch: ProducerBatch) -> None:
        """Put a failed batch back at the head of its partition, to retry after a backoff."""
        with self._lock:
            batch.attempts += 1
            batch.retry_at = self._clock() + self.retry_backoff
            self._batches.setdefault(batch.tp, deque()).appendleft(batch)

    def delivery_deadline(self, batch: ProducerBatch) -> float:
        return batch.created + self.delivery_timeout

    def expire(self) -> list[ProducerBatch]:
        """Remove and return queued batches older than ``delivery_timeout_ms``."""
        now = self._clock()
        expired = []
        with self._lock:
            for queue in self._batches.values():
                while queue and now >= queue[0].created + self.delivery_timeout:
                    batch = queue.popleft()
                    batch.seal()
                    expired.append(batch)
        return expired

    def deallocate(self, batch: ProducerBatch) -> None:
        """A batch is finished (acknowledged or failed): release its memory."""
        with self._lock:
            if batch in self._incomplete:
                self._incomplete.discard(batch)
                self._free_memory += batch.reserved_bytes
                self._memory_freed.notify_all()

    def abort_all(self) -> list[ProducerBatch]:
        """Remove and return every queued batch (forced close)."""
        with self._lock:
            batches = [b for queue in self._batches.values() for b in queue]
            self._batches.clear()
            for batch in batches:
                batch.seal()
            return batches

    @property
    def incomplete_count(self) -> int:
        return len(self._incomplete)
