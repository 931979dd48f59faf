"""Fetching: one Fetch request per leader, responses turned into ConsumerRecords on demand.

The application's thread sends fetches (:meth:`Fetcher.send_fetches`) for every fetchable
partition that has nothing buffered, at most one request in flight per broker; the I/O thread
only queues each response's partitions. ``poll()`` then decodes buffered partitions lazily
(:meth:`Fetcher.fetched_records`) and sends the next round *before* returning, so the broker
works on the next fetch while the application processes the current records.

Data fetched for a position that has since moved (seek, rebalance, pause) is dropped, never
returned: a completed fetch is only used while the partition's position still equals the
offset it was fetched from.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from bisect import bisect_left
from collections import defaultdict, deque
from collections.abc import Iterator
from typing import Any, NamedTuple

from kafkalite.client.client import KafkaClient
from kafkalite.client.metrics import FetchCounters
from kafkalite.consumer.read_replicas import ReadReplicas
from kafkalite.consumer.subscription_state import SubscriptionState
from kafkalite.errors import CorruptRecordError, KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    OffsetOutOfRangeError,
    TopicAuthorizationFailedError,
    error_for_code,
)
from kafkalite.records import RecordBatchView, iter_batches
from kafkalite.records.accelerator import speedups
from kafkalite.records.v2_records import Columns, SectionRange, decode_section, is_plain
from kafkalite.serde import BytesDeserializer, Deserializer
from kafkalite.structs import ConsumerRecord, TopicPartition

log = logging.getLogger(__name__)

_CONTROL_KEY = struct.Struct(">hh")
_ABORT_MARKER = 0
_new_record = tuple.__new__


class CompletedFetch:
    """One partition's part of a Fetch response, queued by the I/O thread."""

    __slots__ = ("assignment_version", "data", "fetch_offset", "tp")

    def __init__(self, tp: TopicPartition, fetch_offset: int, data: dict[str, Any],
                 assignment_version: int) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset
        self.data = data
        self.assignment_version = assignment_version


class BatchChunk(NamedTuple):
    """Consecutive records of one batch with the batch facts they share.

    ``records`` are decoded columns, or, for a plain batch (see
    :func:`~kafkalite.records.v2_records.is_plain`), a range of its records section that
    is decoded only when taken: into Python columns for ``poll()``, straight into Arrow
    buffers for ``poll_arrow()``.
    """

    records: Columns | SectionRange
    timestamp_type: int
    leader_epoch: int

    @property
    def columns(self) -> Columns:
        records = self.records
        return records if isinstance(records, Columns) else records.columns()

    @property
    def size(self) -> int:
        """How many records."""
        records = self.records
        return len(records) if isinstance(records, Columns) else records.stop - records.start

    @property
    def last_offset(self) -> int:
        records = self.records
        if isinstance(records, Columns):
            return records.offsets[-1]
        return records.section.base_offset + records.stop - 1

    def slice(self, start: int, stop: int) -> BatchChunk:
        """Its records ``start..stop-1``."""
        records = self.records
        if isinstance(records, Columns):
            part: Columns | SectionRange = records.slice(start, stop)
        else:
            part = records._replace(start=records.start + start, stop=records.start + stop)
        return self._replace(records=part)


class PartitionRecords:
    """The records of one completed fetch, decoded one batch at a time as they are taken.

    Only one batch is decoded (and, if compressed, decompressed) at a time, so memory
    stays near the fetch's own bytes whatever the compression ratio. A batch that does
    not decode ends the records: those before it are handed out first, then
    :attr:`error` (naming the partition and offset) is what the next take raises.
    """

    __slots__ = ("_batch_end", "_batches", "_chunk", "_index", "_size", "error", "exhausted",
                 "position", "tp")

    def __init__(self, tp: TopicPartition,
                 batches: Iterator[tuple[BatchChunk | None, int]], position: int) -> None:
        self.tp = tp
        self._batches = batches
        self._chunk: BatchChunk | None = None
        self._index = 0
        self._size = 0
        self._batch_end = position
        self.exhausted = False
        self.error: CorruptRecordError | None = None
        self.position = position
        """The partition position these records continue from; a different one means the
        application moved it (seek) and the records are stale. It moves past each batch
        once its records are taken, so control batches and compacted gaps are not
        fetched again."""

    def take(self, count: int, *, columns: bool = False) -> tuple[list[BatchChunk], int]:
        """Up to ``count`` records, as chunks of batches, and how many; :attr:`position`
        moves past them. With ``columns`` every chunk is decoded columns: a batch taken
        in several parts is then decoded once, not once per part."""
        taken: list[BatchChunk] = []
        total = 0
        while total < count and not self.exhausted:
            chunk, index, size = self._chunk, self._index, self._size
            if chunk is not None and index < size:
                if columns and not isinstance(chunk.records, Columns):
                    chunk = self._chunk = chunk._replace(records=chunk.columns)
                stop = min(index + count - total, size)
                if index or stop < size:
                    chunk = chunk.slice(index, stop)
                taken.append(chunk)
                total += stop - index
                self._index = stop
                self.position = chunk.last_offset + 1
                if stop == size:
                    self.position = max(self.position, self._batch_end)
                continue
            try:
                chunk, self._batch_end = next(self._batches)
            except StopIteration:
                self.exhausted = True
            except CorruptRecordError as exc:
                self.error = exc
                self.exhausted = True
            else:
                self._chunk, self._index = chunk, 0
                self._size = 0 if chunk is None else chunk.size
                if not self._size:  # control batch, aborted data, or before the position
                    self.position = max(self.position, self._batch_end)
        return taken, total


class Fetcher:
    """See the module docstring."""

    def __init__(self, client: KafkaClient, subscriptions: SubscriptionState,
                 config: dict[str, Any]) -> None:
        self._client = client
        self._subscriptions = subscriptions
        self._max_wait_ms: int = config["fetch_max_wait_ms"]
        self._min_bytes: int = config["fetch_min_bytes"]
        self._max_bytes: int = config["fetch_max_bytes"]
        self._partition_max_bytes: int = config["max_partition_fetch_bytes"]
        self._isolation_level: int = config["isolation_level"]
        self._read_replicas = ReadReplicas(config["metadata_max_age_ms"] / 1000)
        self._rack_id: str = config["client_rack"] or ""
        """Sent as Fetch v11+'s rack_id (KIP-392) so a rack-aware broker can name a
        preferred read replica in this consumer's rack."""
        self._check_crcs: bool = config["check_crcs"]
        self._key_deserializer: Deserializer = config["key_deserializer"]
        self._value_deserializer: Deserializer = config["value_deserializer"]
        self._completed: deque[CompletedFetch] = deque()
        self._in_flight: set[int] = set()
        self._current: PartitionRecords | None = None
        self._event = threading.Condition()
        self.leaderless_ticket: int | None = None
        """Set by :meth:`send_fetches` when a fetchable partition has no known leader and
        no fetch is in flight: the metadata refresh to wait for (no Fetch answer would wake
        the consumer before the leader is known)."""
        self.records_lag_max = 0
        """The most records a partition's position has been behind its high watermark
        after records were handed out (kafka-python's ``records-lag-max``, since start)."""
        self.returned_bytes = 0
        self.counters = FetchCounters()
        """Fetch requests answered, their latency and bytes (the consumer's metrics)."""
        """Key and value bytes of every record handed out so far (the consumer's byte
        metric, summed per chunk so that it adds no per-record Python loop)."""

    # -- sending (application thread) ------------------------------------------------------

    def send_fetches(self) -> int:
        """Send a Fetch to each leader of fetchable, unbuffered partitions; how many sent."""
        subscriptions = self._subscriptions
        cluster = self._client.cluster
        with self._event:
            buffered = {completed.tp for completed in self._completed}
            in_flight = set(self._in_flight)
        if self._current is not None and not self._current.exhausted:
            buffered.add(self._current.tp)
        by_node: dict[int, list[tuple[TopicPartition, int]]] = defaultdict(list)
        ticket = None
        for tp in subscriptions.fetchable_partitions():
            if tp in buffered:
                continue
            leader = cluster.leader_for(tp)
            if leader is None:
                ticket = self._client.metadata.request_update()
                continue
            node = self._read_replicas.node_for(tp, leader,
                                                lambda n: cluster.broker(n) is not None)
            if node not in in_flight:
                position = subscriptions.state(tp).position
                assert position is not None
                by_node[node].append((tp, position))
        version = subscriptions.assignment_version
        for node, partitions in by_node.items():
            with self._event:
                self._in_flight.add(node)
            future = self._client.send(node, ApiKey.FETCH, self._request(partitions))
            future.add_callback(self._on_response, node, dict(partitions), version)
            future.add_errback(self._on_failure, node)
            future.add_callback(self._count_fetch, time.monotonic())
        self.leaderless_ticket = ticket if not by_node and not in_flight else None
        return len(by_node)

    def _request(self, partitions: list[tuple[TopicPartition, int]]) -> dict[str, Any]:
        by_topic: dict[str, list[dict[str, int]]] = defaultdict(list)
        for tp, offset in partitions:
            by_topic[tp.topic].append({
                "partition": tp.partition, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": self._partition_max_bytes})
        return {
            "replica_id": -1, "max_wait_ms": self._max_wait_ms, "min_bytes": self._min_bytes,
            "max_bytes": self._max_bytes, "isolation_level": self._isolation_level,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [],
            "rack_id": self._rack_id,
            "topics": [self._client.cluster.fetch_topic(t, p) for t, p in by_topic.items()],
        }

    # -- I/O thread --------------------------------------------------------------------------

    def _on_response(self, node: int, offsets: dict[TopicPartition, int], version: int,
                     body: dict[str, Any]) -> None:
        completed = []
        for topic in body["responses"]:
            name = self._client.cluster.fetched_topic(topic)
            if name is None:
                continue
            for part in topic["partitions"]:
                tp = TopicPartition(name, part["partition_index"])
                if self._read_replicas.on_partition(tp, node, part):
                    continue  # the preferred replica refused it: the leader is asked next
                offset = offsets.get(tp)
                if offset is not None:
                    completed.append(CompletedFetch(tp, offset, part, version))
        top_error = body.get("error_code", 0)
        if top_error:
            log.warning("Fetch from node %s failed: %s", node, error_for_code(top_error).__name__)
        with self._event:
            self._in_flight.discard(node)
            self._completed.extend(completed)
            self._event.notify_all()

    def _count_fetch(self, sent_at: float, body: dict[str, Any]) -> None:
        self.counters.answered_after(time.monotonic() - sent_at, sum(
            len(part["records"] or b"") for topic in body["responses"]
            for part in topic["partitions"]))

    def _on_failure(self, node: int, error: BaseException) -> None:
        log.debug("Fetch to node %s failed: %r", node, error)
        self._read_replicas.forget_node(node)
        if isinstance(error, KafkaError) and error.invalid_metadata:
            self._client.metadata.request_update()
        with self._event:
            self._in_flight.discard(node)
            self._event.notify_all()

    # -- waiting (any thread) ------------------------------------------------------------------

    def wait_for_data(self, timeout: float) -> None:
        """Block until a fetch completes, :meth:`wakeup` is called, or ``timeout`` passes."""
        with self._event:
            if not self._completed:
                self._event.wait(timeout)

    def wakeup(self) -> None:
        with self._event:
            self._event.notify_all()

    def has_buffered_data(self) -> bool:
        with self._event:
            if self._completed:
                return True
        return self._current is not None and not self._current.exhausted

    # -- draining (application thread) ---------------------------------------------------------

    def fetched_records(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to ``max_records`` records from the buffered fetches, positions advanced."""
        drained: dict[TopicPartition, list[ConsumerRecord]] = {}
        for tp, chunks in self.fetched_chunks(max_records, columns=True).items():
            records = drained[tp] = []
            for chunk in chunks:
                built, size = _consumer_records(tp, chunk, self._key_deserializer,
                                                self._value_deserializer)
                records += built
                self.returned_bytes += size
        return drained

    def fetched_chunks(self, max_records: int, *, columns: bool = False
                       ) -> dict[TopicPartition, list[BatchChunk]]:
        """Up to ``max_records`` records from the buffered fetches as chunks (what
        ``poll_arrow`` builds its arrays from; all decoded with ``columns``), positions
        advanced."""
        drained: dict[TopicPartition, list[BatchChunk]] = {}
        remaining = max_records
        subscriptions = self._subscriptions
        while remaining > 0:
            current = self._current
            if current is None or current.exhausted:
                with self._event:
                    completed = self._completed.popleft() if self._completed else None
                if completed is None:
                    break
                self._current = self._initialize(completed)
                continue
            state = subscriptions.state(current.tp) \
                if subscriptions.is_fetchable(current.tp) else None
            if state is None or state.position != current.position:
                self._current = None  # paused, revoked or moved by seek since the fetch
                continue
            chunks, count = current.take(remaining, columns=columns)
            if chunks:
                drained.setdefault(current.tp, []).extend(chunks)
                remaining -= count
            state.position = current.position
            self.records_lag_max = max(self.records_lag_max, state.high_watermark - state.position)
            if current.error is not None:
                if drained:
                    break  # the good records first; the error on the next call
                self._current = None  # refetched (and raised again) unless the app seeks
                raise current.error
        return drained

    def _initialize(self, completed: CompletedFetch) -> PartitionRecords | None:
        """Check a completed fetch is still wanted, handle its error, decode its records."""
        tp = completed.tp
        subscriptions = self._subscriptions
        if (completed.assignment_version != subscriptions.assignment_version
                or not subscriptions.is_fetchable(tp)):
            return None
        state = subscriptions.state(tp)
        if state.position != completed.fetch_offset:
            return None
        data = completed.data
        code = data["error_code"]
        if code:
            self._handle_error(tp, code, completed.fetch_offset)
            return None
        state.high_watermark = data["high_watermark"]
        state.last_stable_offset = data["last_stable_offset"]
        state.log_start_offset = data["log_start_offset"]
        raw = data["records"]
        if not raw:
            return None
        aborted = None
        if self._isolation_level and data["aborted_transactions"]:
            aborted = sorted(data["aborted_transactions"], key=lambda a: a["first_offset"])
        return PartitionRecords(tp, self._decode(tp, raw, completed.fetch_offset, aborted),
                                completed.fetch_offset)

    def _handle_error(self, tp: TopicPartition, code: int, fetch_offset: int) -> None:
        error = error_for_code(code)
        if error is OffsetOutOfRangeError:
            if self._subscriptions.default_reset_strategy == "none":
                raise OffsetOutOfRangeError(f"{tp} at offset {fetch_offset}, and "
                                            "auto_offset_reset is 'none'")
            log.info("offset %d out of range for %s; resetting", fetch_offset, tp)
            self._subscriptions.request_reset(tp)
        elif error.invalid_metadata or code == 78:  # 78: OFFSET_NOT_AVAILABLE
            self._client.metadata.request_update()
        elif error is TopicAuthorizationFailedError or not error.retriable:
            raise error(f"fetching {tp} at offset {fetch_offset}")
        else:
            log.warning("fetching %s: %s; retrying", tp, error.__name__)

    def _decode(self, tp: TopicPartition, raw: bytes | memoryview, position: int,
                aborted: list[dict[str, int]] | None
                ) -> Iterator[tuple[BatchChunk | None, int]]:
        """Per batch: its records at or after ``position`` (none for control batches and
        aborted data) and the offset after it.

        A batch that does not decode, or decompresses beyond ``fetch_max_bytes``, ends the
        iteration with a :class:`CorruptRecordError` naming the partition and offset.
        """
        topic, partition = tp
        max_bytes = self._max_bytes
        aborted_producers: set[int] = set()
        next_offset = position
        batches = iter_batches(raw)
        while True:
            try:
                batch = next(batches, None)
                if batch is None:
                    return
                if batch.next_offset <= position:
                    continue
                if aborted is not None:
                    while aborted and aborted[0]["first_offset"] <= batch.last_offset:
                        aborted_producers.add(aborted.pop(0)["producer_id"])
                    if batch.is_control:
                        if batch.producer_id in aborted_producers and _is_abort_marker(batch, max_bytes):
                            aborted_producers.discard(batch.producer_id)
                        next_offset = batch.next_offset
                        yield None, next_offset
                        continue
                    if batch.is_transactional and batch.producer_id in aborted_producers:
                        next_offset = batch.next_offset
                        yield None, next_offset
                        continue
                if batch.is_control:
                    next_offset = batch.next_offset
                    yield None, next_offset
                    continue
                if self._check_crcs:
                    batch.ensure_valid()
                records = self._batch_records(batch, position)
            except CorruptRecordError as exc:
                where = max(next_offset, position)
                raise exc.at(topic, partition, where) from exc
            next_offset = batch.next_offset
            yield BatchChunk(records, batch.timestamp_type,
                             batch.partition_leader_epoch if batch.magic == 2 else -1), next_offset

    def _batch_records(self, batch: RecordBatchView, position: int) -> Columns | SectionRange:
        """A batch's records at or after ``position``: a plain v2 batch is left undecoded
        (its offsets are known), any other is decoded now."""
        if batch.magic == 2:
            section = batch.section(max_bytes=self._max_bytes)
            if is_plain(section):
                start = min(max(position - section.base_offset, 0), section.record_count)
                return SectionRange(section, start, section.record_count)
            columns = decode_section(section)
        else:
            columns = batch.columns(check_crcs=self._check_crcs, max_bytes=self._max_bytes)
        offsets = columns.offsets
        if offsets and offsets[0] < position:  # the fetch started inside this batch
            start = bisect_left(offsets, position)
            columns = columns.slice(start)
        return columns


def _consumer_records(tp: TopicPartition, chunk: BatchChunk, key_deserializer: Deserializer,
                      value_deserializer: Deserializer) -> tuple[list[ConsumerRecord], int]:
    """A chunk's records and the bytes of their keys and values: one C loop where the
    compiled codec runs, else one comprehension."""
    topic, partition = tp
    offsets, timestamps, raw_keys, raw_values, headers = chunk.columns
    keys = raw_keys if isinstance(key_deserializer, BytesDeserializer) else [
        key_deserializer.deserialize(topic, key) for key in raw_keys]
    values = raw_values if isinstance(value_deserializer, BytesDeserializer) else [
        value_deserializer.deserialize(topic, value) for value in raw_values]
    timestamp_type, leader_epoch = chunk.timestamp_type, chunk.leader_epoch
    if speedups is not None:
        built: tuple[list[ConsumerRecord], int] | None = speedups.consumer_records(
            ConsumerRecord, topic, partition, timestamp_type, leader_epoch, offsets, timestamps,
            raw_keys, raw_values, headers, keys, values)
        if built is not None:
            return built
    sizes = [-1 if key is None else len(key) for key in raw_keys]
    value_sizes = [-1 if value is None else len(value) for value in raw_values]
    size = sum(sizes) + sizes.count(-1) + sum(value_sizes) + value_sizes.count(-1)
    return [_new_record(ConsumerRecord, (topic, partition, offset, timestamp, timestamp_type,
                                         key, value, header, leader_epoch, key_size, value_size,
                                         -1))
            for offset, timestamp, key, value, header, key_size, value_size
            in zip(offsets, timestamps, keys, values, headers, sizes, value_sizes, strict=True)
            ], size


def _is_abort_marker(batch: RecordBatchView, max_bytes: int) -> bool:
    records = batch.records(max_bytes=max_bytes)
    if not records or records[0].key is None or len(records[0].key) < 4:
        return False
    _version, kind = _CONTROL_KEY.unpack_from(records[0].key)
    return bool(kind == _ABORT_MARKER)
