"""The asyncio consumer's fetching: one Fetch in flight per leader, records decoded lazily.

A background task sends a Fetch to each leader of the fetchable partitions, one request in
flight per leader; a partition's next fetch starts where its last buffered one ends, so the
broker reads the next records while the application takes the current ones. Each answered
partition becomes a :class:`FetchedPartition`, which decodes one batch at a time only as
records are taken (so a large, compressed fetch costs the loop one batch per step, never
the whole response at once). Data fetched for a position that has since moved (seek, pause,
reassignment) is dropped, as in the threaded consumer.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from bisect import bisect_left
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from kafkalite.aio.client import AIOClient
from kafkalite.aio.structs import ConsumerRecord
from kafkalite.consumer.subscription_state import SubscriptionState
from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    OffsetOutOfRangeError,
    TopicAuthorizationFailedError,
    error_for_code,
)
from kafkalite.records import RecordBatchView, iter_batches
from kafkalite.records.accelerator import speedups
from kafkalite.records.v2_records import Columns
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)

Deserializer = Callable[[bytes], Any] | None
_CONTROL_KEY = struct.Struct(">hh")
_ABORT_MARKER = 0
OFFSET_NOT_AVAILABLE = 78
PREFETCH_DEPTH = 2
"""Fetches buffered per partition: the one being taken and the next."""
_NO_RECORDS = Columns([], [], [], [], [])
RECORD_SLOTS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value",
                "checksum", "serialized_key_size", "serialized_value_size", "headers")
"""ConsumerRecord's slots in the order ``slot_records`` stores them."""


class FetchedPartition:
    """One partition's records from one Fetch answer, decoded a batch at a time."""

    def __init__(self, tp: TopicPartition, fetch_offset: int, raw: bytes,
                 aborted: list[dict[str, int]] | None, check_crcs: bool, max_bytes: int
                 ) -> None:
        self.tp = tp
        self.position = fetch_offset
        self.end_offset = max((batch.next_offset for batch in iter_batches(raw)),
                              default=fetch_offset)
        """The offset after its last whole batch: where the next fetch starts, sent
        before these records are taken (prefetching)."""
        self._batches = self._decode(raw, aborted, check_crcs, max_bytes)
        self._columns = _NO_RECORDS
        self._timestamp_type = 0
        self._index = 0
        self._batch_end = fetch_offset
        self.exhausted = False

    def _decode(self, raw: bytes, aborted: list[dict[str, int]] | None, check_crcs: bool,
                max_bytes: int) -> Iterator[tuple[Columns, int, int]]:
        """Per batch: its records at or after the fetch offset (as columns), its timestamp
        type, and the offset after it."""
        aborted_producers: set[int] = set()
        start = self.position
        for batch in iter_batches(raw):
            if batch.next_offset <= start:
                continue
            if aborted is not None:
                while aborted and aborted[0]["first_offset"] <= batch.last_offset:
                    aborted_producers.add(aborted.pop(0)["producer_id"])
                if batch.is_control and batch.producer_id in aborted_producers \
                        and _is_abort_marker(batch, max_bytes):
                    aborted_producers.discard(batch.producer_id)
                if batch.is_transactional and batch.producer_id in aborted_producers:
                    yield _NO_RECORDS, 0, batch.next_offset
                    continue
            if batch.is_control:
                yield _NO_RECORDS, 0, batch.next_offset
                continue
            if check_crcs:
                batch.ensure_valid()
            columns = batch.columns(max_bytes=max_bytes)
            if columns.offsets and columns.offsets[0] < start:  # fetched from inside it
                columns = columns.slice(bisect_left(columns.offsets, start))
            yield columns, batch.timestamp_type, batch.next_offset

    def take(self, count: int) -> list[Chunk]:
        """Up to ``count`` records, as column slices of their batches; :attr:`position`
        moves past them (and past a batch's control records or compacted gaps once its
        last record is taken)."""
        taken: list[Chunk] = []
        while count > 0:
            columns = self._columns
            size = len(columns.offsets)
            if self._index < size:
                start, stop = self._index, min(size, self._index + count)
                if start or stop < size:
                    columns = columns.slice(start, stop)
                taken.append(Chunk(columns, self._timestamp_type))
                count -= stop - start
                self._index = stop
                self.position = columns.offsets[-1] + 1
                if stop == size:
                    self.position = max(self.position, self._batch_end)
                continue
            batch = next(self._batches, None)
            if batch is None:
                self.exhausted = True
                break
            self._columns, self._timestamp_type, self._batch_end = batch
            self._index = 0
            if not self._columns.offsets:
                self.position = max(self.position, self._batch_end)
        return taken


class Chunk(NamedTuple):
    """Consecutive records of one batch, as decoded columns."""

    columns: Columns
    timestamp_type: int


def records(tp: TopicPartition, chunks: list[Chunk], key_deserializer: Deserializer,
            value_deserializer: Deserializer) -> list[ConsumerRecord]:
    """The chunks' records as aiokafka's ConsumerRecords."""
    built: list[ConsumerRecord] = []
    for chunk in chunks:
        built += _records(tp, chunk.columns, chunk.timestamp_type, key_deserializer,
                          value_deserializer)
    return built


def _records(tp: TopicPartition, columns: Columns, timestamp_type: int,
             key_deserializer: Deserializer, value_deserializer: Deserializer
             ) -> list[ConsumerRecord]:
    """A batch's records as aiokafka's ConsumerRecords.

    Each record is allocated with ``object.__new__`` and its slots stored, which is what
    the dataclass's ``__init__`` does (it only assigns the fields) without a Python frame
    per record: building the records is most of a consumer's CPU time. The compiled codec
    does it in one C loop (``slot_records``); this loop is its reference, and runs where
    the codec is not built or declines. ``test_fetcher`` checks both against the
    constructor, so a field added to ConsumerRecord cannot be missed here."""
    topic, partition = tp
    offsets, timestamps, raw_keys, raw_values, headers = columns
    keys = raw_keys if key_deserializer is None else [
        None if key is None else key_deserializer(key) for key in raw_keys]
    values = raw_values if value_deserializer is None else [
        None if value is None else value_deserializer(value) for value in raw_values]
    if speedups is not None:
        made: list[ConsumerRecord] | None = speedups.slot_records(
            ConsumerRecord, RECORD_SLOTS, topic, partition, timestamp_type, offsets,
            timestamps, raw_keys, raw_values, headers, keys, values)
        if made is not None:
            return made
    built: list[ConsumerRecord] = []
    append = built.append
    new = object.__new__
    record_class = ConsumerRecord
    for offset, timestamp, key, value, key_size, value_size, record_headers in zip(
            offsets, timestamps, keys, values, _sizes(raw_keys), _sizes(raw_values), headers,
            strict=True):
        record = new(record_class)
        record.topic = topic
        record.partition = partition
        record.offset = offset
        record.timestamp = timestamp
        record.timestamp_type = timestamp_type
        record.key = key
        record.value = value
        record.checksum = None
        record.serialized_key_size = key_size
        record.serialized_value_size = value_size
        record.headers = record_headers
        append(record)
    return built


def _sizes(column: list[bytes | None]) -> list[int]:
    """Each entry's length, -1 for None; a column all of one kind costs no Python loop."""
    nulls = column.count(None)
    if not nulls:
        return list(map(len, column))  # type: ignore[arg-type]
    if nulls == len(column):
        return [-1] * nulls
    return [-1 if data is None else len(data) for data in column]


def _is_abort_marker(batch: RecordBatchView, max_bytes: int) -> bool:
    records = batch.records(max_bytes=max_bytes)
    if not records or records[0].key is None or len(records[0].key) < 4:
        return False
    return bool(_CONTROL_KEY.unpack_from(records[0].key)[1] == _ABORT_MARKER)


class Fetcher:
    """Sends fetches for the fetchable partitions and buffers what comes back."""

    def __init__(self, client: AIOClient, subscriptions: SubscriptionState, *,
                 max_wait_ms: int, min_bytes: int, max_bytes: int, partition_max_bytes: int,
                 isolation_level: int, check_crcs: bool, rack_id: str) -> None:
        self._client = client
        self._subscriptions = subscriptions
        self._max_wait_ms = max_wait_ms
        self._min_bytes = min_bytes
        self._max_bytes = max_bytes
        self._partition_max_bytes = partition_max_bytes
        self._isolation_level = isolation_level
        self._check_crcs = check_crcs
        self._rack_id = rack_id
        self.buffered: dict[TopicPartition, deque[FetchedPartition]] = {}
        """Per partition, fetched records in offset order: the one being taken, and the
        next fetch's, asked for while the application works through the first."""
        self._in_flight: dict[int, asyncio.Task[None]] = {}
        self.arrived = asyncio.Event()
        """Set when the fetch loop should look again (an answer, a seek, a resume)."""
        self.has_data = asyncio.Event()
        """Set when records (or an error) are buffered for the application."""
        self.error: BaseException | None = None
        """A fetch error for the application (raised by the next getone/getmany)."""
        self.answered_at: dict[TopicPartition, int] = {}
        """When (ms since the epoch) each partition's latest fetch answer came."""

    def send_fetches(self) -> None:
        """A Fetch to each leader with none in flight, for its fetchable partitions with
        less than :data:`PREFETCH_DEPTH` fetches buffered (from where the last one ends)."""
        subscriptions = self._subscriptions
        cluster = self._client.cluster
        by_node: dict[int, list[tuple[TopicPartition, int]]] = defaultdict(list)
        for tp in subscriptions.fetchable_partitions():
            queue = self._queue(tp)
            if len(queue) >= PREFETCH_DEPTH:
                continue
            leader = cluster.leader_for(tp)
            if leader is None:
                try:
                    self._client.check_topic(tp.topic)
                except KafkaError as exc:
                    self.fail(exc)
                cluster.request_update()
                continue
            if leader not in self._in_flight:
                by_node[leader].append((tp, self._next_offset(tp, queue)))
        loop = asyncio.get_running_loop()
        for node, partitions in by_node.items():
            self._in_flight[node] = loop.create_task(self._fetch(node, dict(partitions)))

    async def _fetch(self, node: int, offsets: dict[TopicPartition, int]) -> None:
        by_topic: dict[str, list[dict[str, int]]] = defaultdict(list)
        for tp, offset in offsets.items():
            by_topic[tp.topic].append({
                "partition": tp.partition, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": self._partition_max_bytes})
        body = {"replica_id": -1, "max_wait_ms": self._max_wait_ms,
                "min_bytes": self._min_bytes, "max_bytes": self._max_bytes,
                "isolation_level": self._isolation_level, "session_id": 0,
                "session_epoch": -1, "forgotten_topics_data": [], "rack_id": self._rack_id,
                "topics": [self._client.cluster.fetch_topic(t, p) for t, p in by_topic.items()]}
        try:
            answer = await self._client.send(node, ApiKey.FETCH, body)
        except KafkaError as exc:
            log.debug("Fetch from node %s failed: %r", node, exc)
            self._client.cluster.request_update()
            await asyncio.sleep(self._client.retry_backoff)
            self._in_flight.pop(node, None)
            self.arrived.set()
            return
        self._in_flight.pop(node, None)
        for topic in answer["responses"]:
            name = self._client.cluster.fetched_topic(topic)
            if name is None:
                continue
            for part in topic["partitions"]:
                tp = TopicPartition(name, part["partition_index"])
                fetched_from = offsets.get(tp)
                if fetched_from is not None:
                    self._completed(tp, fetched_from, part)
        self.arrived.set()

    def _queue(self, tp: TopicPartition) -> deque[FetchedPartition]:
        """``tp``'s buffered fetches, emptied first if its position moved (a seek) since."""
        queue = self.buffered.setdefault(tp, deque())
        if queue and queue[0].position != self._subscriptions.state(tp).position:
            queue.clear()
        return queue

    def _next_offset(self, tp: TopicPartition, queue: deque[FetchedPartition]) -> int:
        if queue:
            return queue[-1].end_offset
        position = self._subscriptions.state(tp).position
        assert position is not None
        return position

    def _completed(self, tp: TopicPartition, fetch_offset: int, data: dict[str, Any]) -> None:
        subscriptions = self._subscriptions
        if not subscriptions.is_fetchable(tp):
            return
        queue = self._queue(tp)
        if self._next_offset(tp, queue) != fetch_offset:
            return  # fetched for a position since moved
        state = subscriptions.state(tp)
        code = data["error_code"]
        if code:
            error = error_for_code(code)
            if error is OffsetOutOfRangeError:
                if subscriptions.default_reset_strategy == "none":
                    self.fail(OffsetOutOfRangeError(f"{tp} at offset {fetch_offset}"))
                else:
                    subscriptions.request_reset(tp)
            elif error.invalid_metadata or code == OFFSET_NOT_AVAILABLE:
                self._client.cluster.request_update()
            elif error is TopicAuthorizationFailedError or not error.retriable:
                self.fail(error(f"fetching {tp} at offset {fetch_offset}"))
            return
        self.answered_at[tp] = int(time.time() * 1000)
        state.high_watermark = data["high_watermark"]
        state.last_stable_offset = data["last_stable_offset"]
        state.log_start_offset = data["log_start_offset"]
        raw = data["records"]
        if not raw:
            return
        aborted = None
        if self._isolation_level and data["aborted_transactions"]:
            aborted = sorted(data["aborted_transactions"], key=lambda a: a["first_offset"])
        fetched = FetchedPartition(tp, fetch_offset, bytes(raw), aborted, self._check_crcs,
                                   self._max_bytes)
        if fetched.end_offset > fetch_offset:  # else no whole batch came: fetch it again
            queue.append(fetched)
            self.has_data.set()

    def fail(self, error: BaseException) -> None:
        """Hand ``error`` to the application's next getone/getmany."""
        self.error = error
        self.has_data.set()

    def take(self, partitions: set[TopicPartition] | None, max_records: int
             ) -> dict[TopicPartition, list[Chunk]]:
        """Up to ``max_records`` buffered records (of ``partitions``, if given) as column
        chunks, positions moved past them; stale buffers are dropped."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        subscriptions = self._subscriptions
        drained: dict[TopicPartition, list[Chunk]] = {}
        remaining = max_records
        for tp in list(self.buffered):
            if partitions is not None and tp not in partitions:
                continue
            if not subscriptions.is_fetchable(tp):
                del self.buffered[tp]
                continue
            queue = self._queue(tp)
            while queue and remaining > 0:
                fetched = queue[0]
                chunks = fetched.take(remaining)
                subscriptions.state(tp).position = fetched.position
                if chunks:
                    drained.setdefault(tp, []).extend(chunks)
                    remaining -= sum(len(chunk.columns.offsets) for chunk in chunks)
                if fetched.exhausted:
                    queue.popleft()
            if remaining <= 0:
                break
        return drained

    async def close(self) -> None:
        tasks = list(self._in_flight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._in_flight.clear()
