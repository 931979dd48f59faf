"""``AIOKafkaProducer``: aiokafka's producer, natively on the event loop.

``send`` appends the record to its partition's open batch (encoded at once by the compiled
record codec) and returns the record's future; a sender task drains ready batches into one
Produce request per leader, with at most one batch per partition in flight (so retries keep
order). A batch is ready when it is full, when ``linger_ms`` has passed since its first
record, or when someone flushes. With ``linger_ms=0`` the batch leaves as soon as the loop
runs the sender: records sent meanwhile (while a request is in flight) travel together.

``send`` waits (yielding to the loop) while its partition has a full batch queued behind
one in flight: the back-pressure that keeps a tight ``send`` loop from holding the loop or
growing without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from kafkalite.aio.batches import BatchBuilder, ProducerBatch, Serializer, serialize
from kafkalite.aio.client import AIOClient, security_settings
from kafkalite.aio.errors import IllegalOperation, ProducerClosed
from kafkalite.aio.structs import RecordMetadata
from kafkalite.aio.transactions import Transactions
from kafkalite.errors import (
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NetworkError,
)
from kafkalite.producer.partitioners import partition_for_key
from kafkalite.producer.transactions import State
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import DuplicateSequenceNumberError, error_for_code
from kafkalite.records.builder import BatchBuilder as RecordsBuilder
from kafkalite.records.builder import estimate_record_size
from kafkalite.records.compression import codec_id
from kafkalite.structs import TopicPartition

__all__ = ["AIOKafkaProducer"]

log = logging.getLogger(__name__)

_MISSING: Any = object()
_Partitions = tuple[list[int], list[int], list[TopicPartition]]
_RECORD_OVERHEAD_BOUND = 128
"""More than a record without headers adds to its key and value bytes, alone in a batch
(the batch header, the record's varints and attributes; see estimate_record_size)."""
_QUEUED_BATCHES_PER_PARTITION = 2
"""Full batches a partition may hold waiting before ``send`` waits for one to leave."""


def default_partitioner(key: bytes | None, all_partitions: Sequence[int],
                        available: Sequence[int]) -> int:
    """aiokafka's default: murmur2 of the key (Java's choice); a random available
    partition for records without one."""
    if key is not None:
        return all_partitions[partition_for_key(key, len(all_partitions))]
    choices = available or all_partitions
    return choices[int(random.random() * len(choices))]


def _now_ms() -> int:
    return int(time.time() * 1000)


class AIOKafkaProducer:
    """See the module docstring; the parameters are aiokafka's."""

    _client_ids = 0

    def __init__(
        self, *, loop: Any = None, bootstrap_servers: str | Iterable[str] = "localhost",
        client_id: str | None = None, metadata_max_age_ms: int = 300000,
        request_timeout_ms: int = 40000, api_version: Any = None, acks: Any = _MISSING,
        key_serializer: Serializer = None, value_serializer: Serializer = None,
        compression_type: str | None = None, max_batch_size: int = 16384,
        partitioner: Callable[[bytes | None, Sequence[int], Sequence[int]], int]
        = default_partitioner,
        max_request_size: int = 1048576, linger_ms: int = 0, retry_backoff_ms: int = 100,
        security_protocol: str = "PLAINTEXT", ssl_context: Any = None,
        connections_max_idle_ms: int = 540000, enable_idempotence: bool = False,
        transactional_id: str | None = None, transaction_timeout_ms: int = 60000,
        sasl_mechanism: str = "PLAIN", sasl_plain_password: str | None = None,
        sasl_plain_username: str | None = None, sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None, sasl_oauth_token_provider: Any = None,
    ) -> None:
        if acks not in (0, 1, -1, "all", _MISSING):
            raise ConfigError("acks", f"must be 0, 1, -1 or 'all', not {acks!r}")
        if compression_type not in ("gzip", "snappy", "lz4", "zstd", None):
            raise ConfigError("compression_type", f"{compression_type!r} is not a codec")
        if transactional_id is not None:
            enable_idempotence = True
        if enable_idempotence:
            if acks is _MISSING:
                acks = -1
            elif acks not in ("all", -1):
                raise ConfigError("acks", f"acks={acks} not supported if "
                                  "enable_idempotence=True")
        self._acks = 1 if acks is _MISSING else -1 if acks == "all" else int(acks)
        AIOKafkaProducer._client_ids += 1
        self._client = AIOClient(
            bootstrap_servers=bootstrap_servers,
            client_id=client_id or f"aiokafka-producer-{AIOKafkaProducer._client_ids}",
            request_timeout_ms=request_timeout_ms, metadata_max_age_ms=metadata_max_age_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security_settings(security_protocol, ssl_context, sasl_mechanism,
                                       sasl_plain_username, sasl_plain_password,
                                       sasl_oauth_token_provider))
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._compression = codec_id(compression_type)
        self._batch_size = max_batch_size
        self._partitioner = partitioner
        self._max_request_size = max_request_size
        self._linger = linger_ms / 1000
        self._request_timeout = request_timeout_ms / 1000
        self._retry_backoff = retry_backoff_ms / 1000
        self._open: dict[TopicPartition, ProducerBatch] = {}
        self._queued: defaultdict[TopicPartition, deque[ProducerBatch]] = defaultdict(deque)
        self._in_flight: set[TopicPartition] = set()
        self._requests: set[asyncio.Task[None]] = set()
        self._drained = asyncio.Event()
        self._wakeup = asyncio.Event()
        self._flushing = 0
        self._sender: asyncio.Task[None] | None = None
        self._closed = False
        self._loop = asyncio.get_running_loop()
        self._partitions_cache: dict[str, _Partitions] = {}
        self._partitions_version = -1
        self._size_check_from = max_request_size - _RECORD_OVERHEAD_BOUND
        """Keys and values larger than this together get their size estimated (with
        headers, always): smaller ones cannot reach max_request_size."""
        self._txn = None if not enable_idempotence else Transactions(
            self._client, transactional_id, transaction_timeout_ms, request_timeout_ms,
            retry_backoff_ms, self.flush)

    @property
    def client(self) -> AIOClient:
        return self._client

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the cluster and start the sender."""
        await self._client.bootstrap()
        if self._txn is not None:
            await self._txn.initialize()
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())

    async def flush(self) -> None:
        """Wait until every record sent so far is delivered (or failed)."""
        self._flushing += 1
        try:
            while self._open or any(self._queued.values()) or self._requests:
                self._wakeup.set()
                self._drained.clear()
                await self._drained.wait()
        finally:
            self._flushing -= 1

    async def stop(self) -> None:
        """Deliver what is queued, then close the connections."""
        if self._closed:
            return
        if self._sender is not None:
            await self.flush()
        self._closed = True
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        error = ProducerClosed("the producer was stopped")
        for batch in self._open.values():
            batch.failure(error)
        for queue in self._queued.values():
            for batch in queue:
                batch.failure(error)
        self._open.clear()
        self._queued.clear()
        await self._client.close()

    async def __aenter__(self) -> AIOKafkaProducer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    # -- sending ---------------------------------------------------------------------------

    async def partitions_for(self, topic: str) -> set[int]:
        """The partition ids of ``topic`` (waiting for its metadata)."""
        return set(await self._client.wait_on_metadata(topic, self._request_timeout))

    def _known_partitions(self, topic: str) -> _Partitions | None:
        """(all, available) partition ids of ``topic`` from the metadata, sorted, and its
        TopicPartitions by id; cached until the metadata changes (every send asks)."""
        cluster = self._client.cluster
        if self._partitions_version != cluster.version:
            self._partitions_cache.clear()
            self._partitions_version = cluster.version
        known = self._partitions_cache.get(topic)
        if known is None:
            partitions = cluster.partitions_for_topic(topic)
            if not partitions:
                return None
            known = self._partitions_cache[topic] = (
                sorted(partitions), sorted(cluster.available_partitions_for_topic(topic)),
                [TopicPartition(topic, p) for p in range(max(partitions) + 1)])
        return known

    async def _partition(self, topic: str, partition: int | None,
                         key_bytes: bytes | None) -> int:
        """The partition of a record (waiting for the topic's metadata if unknown)."""
        known = self._known_partitions(topic)
        if known is None:
            await self._client.wait_on_metadata(topic, self._request_timeout)
            known = self._known_partitions(topic)
            assert known is not None
        return self._choose(topic, partition, key_bytes, known)

    def _choose(self, topic: str, partition: int | None, key_bytes: bytes | None,
                known: _Partitions) -> int:
        all_partitions, available, _ = known
        if partition is not None:
            if partition not in all_partitions:
                raise ValueError(f"{topic} has no partition {partition}")
            return partition
        return int(self._partitioner(key_bytes, all_partitions, available))

    def _check_open(self) -> None:
        if self._closed or self._sender is None:
            raise ProducerClosed("the producer is not started" if not self._closed
                                 else "the producer is stopped")

    async def send(self, topic: str, value: Any = None, key: Any = None,
                   partition: int | None = None, timestamp_ms: int | None = None,
                   headers: Sequence[tuple[str, bytes]] | None = None
                   ) -> asyncio.Future[RecordMetadata]:
        """Queue a record; the future of its :class:`RecordMetadata`."""
        if value is None and key is None:
            raise ValueError("a record needs a key or a value")
        if self._closed or self._sender is None:
            self._check_open()
        key_bytes = key if self._key_serializer is None else serialize(self._key_serializer, key)
        value_bytes = value if self._value_serializer is None else \
            serialize(self._value_serializer, value)
        header_list = list(headers) if headers else None
        if header_list is not None or (0 if value_bytes is None else len(value_bytes)) + (
                0 if key_bytes is None else len(key_bytes)) > self._size_check_from:
            size = estimate_record_size(key_bytes, value_bytes, header_list)
            if size > self._max_request_size:
                raise MessageSizeTooLargeError(
                    f"a record of about {size} bytes is larger than max_request_size "
                    f"({self._max_request_size})")
        known = self._known_partitions(topic)
        tp = TopicPartition(topic, await self._partition(topic, partition, key_bytes)) \
            if known is None else known[2][self._choose(topic, partition, key_bytes, known)]
        if self._txn is not None:
            await self._join_transaction(tp)
        while len(self._queued[tp]) >= _QUEUED_BATCHES_PER_PARTITION:
            self._drained.clear()
            await self._drained.wait()
            self._check_open()
        timestamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        future: asyncio.Future[RecordMetadata] = self._loop.create_future()
        batch = self._open.get(tp)
        if batch is None or not batch.append(timestamp, key_bytes, value_bytes, header_list):
            if batch is not None:
                self._close_batch(batch)
            batch = self._new_batch(tp)
            batch.append(timestamp, key_bytes, value_bytes, header_list)
        batch.record_futures.append(future)
        batch.record_timestamps.append(timestamp)
        return future

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None,
                            partition: int | None = None, timestamp_ms: int | None = None,
                            headers: Sequence[tuple[str, bytes]] | None = None
                            ) -> RecordMetadata:
        """Send a record and wait for its :class:`RecordMetadata`."""
        future = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await future

    def create_batch(self) -> BatchBuilder:
        """An empty batch for :meth:`send_batch`."""
        return BatchBuilder(RecordsBuilder(2, self._compression, self._batch_size),
                            self._key_serializer, self._value_serializer, _now_ms)

    async def send_batch(self, batch: BatchBuilder, topic: str, *, partition: int
                         ) -> asyncio.Future[RecordMetadata]:
        """Queue a batch from :meth:`create_batch` as it is; the future of its metadata
        (the offset of its first record)."""
        self._check_open()
        tp = TopicPartition(topic, await self._partition(topic, partition, None))
        await self._join_transaction(tp)
        sending = ProducerBatch(tp, batch.builder, asyncio.get_running_loop().time())
        sending.whole_batch = asyncio.get_running_loop().create_future()
        open_batch = self._open.pop(tp, None)
        if open_batch is not None:
            self._queued[tp].append(open_batch)
        self._queued[tp].append(sending)
        self._wakeup.set()
        return sending.whole_batch

    async def _join_transaction(self, tp: TopicPartition) -> None:
        """With a transactional id: refuse a send outside a transaction, and add ``tp`` to
        the transaction before its first record."""
        txn = self._txn
        if txn is None or txn.manager is None:
            return
        if not txn.in_transaction():
            raise IllegalOperation("Can't send messages while not in transaction")
        await txn.add_partition(tp)

    # -- transactions ----------------------------------------------------------------------

    def _transactions(self) -> Transactions:
        if self._txn is None or self._txn.manager is None:
            raise IllegalOperation("You need to configure transaction_id to use "
                                   "transactions")
        return self._txn

    async def begin_transaction(self) -> None:
        await self._transactions().begin()

    async def commit_transaction(self) -> None:
        await self._transactions().commit()

    async def abort_transaction(self) -> None:
        await self._transactions().abort()

    def transaction(self) -> TransactionContext:
        """``async with producer.transaction():`` begins a transaction, commits it when
        the block ends and aborts it when the block raises."""
        return TransactionContext(self)

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any],
                                          group_id: str) -> None:
        """Commit a consumer group's ``offsets`` as part of the transaction."""
        await self._transactions().send_offsets(offsets, group_id)

    def _new_batch(self, tp: TopicPartition) -> ProducerBatch:
        loop = asyncio.get_running_loop()
        batch = self._open[tp] = ProducerBatch(
            tp, RecordsBuilder(2, self._compression, self._batch_size), loop.time())
        if self._linger:
            loop.call_later(self._linger, self._wakeup.set)
        else:
            self._wakeup.set()
        return batch

    def _close_batch(self, batch: ProducerBatch) -> None:
        del self._open[batch.tp]
        self._queued[batch.tp].append(batch)
        self._wakeup.set()

    # -- the sender ------------------------------------------------------------------------

    async def _send_loop(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            await self._client.maybe_refresh()
            by_node = self._ready_batches()
            for node, batches in by_node.items():
                task = asyncio.get_running_loop().create_task(self._produce(node, batches))
                self._requests.add(task)
                task.add_done_callback(self._request_done)
            # Batches that left their queue for a request make room: a send() waiting for
            # room fills the next batch while this one is in flight, not after its answer.
            self._drained.set()

    def _request_done(self, task: asyncio.Task[None]) -> None:
        self._requests.discard(task)
        self._drained.set()
        self._wakeup.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("produce request failed unexpectedly", exc_info=task.exception())

    def _ready_batches(self) -> dict[int, list[ProducerBatch]]:
        """The next batch of each partition not in flight, by leader."""
        now = asyncio.get_running_loop().time()
        linger_done = now - self._linger
        for tp, batch in list(self._open.items()):
            if not self._queued[tp] and (self._flushing or batch.created <= linger_done):
                self._close_batch(batch)
        by_node: dict[int, list[ProducerBatch]] = defaultdict(list)
        cluster = self._client.cluster
        for tp, queue in self._queued.items():
            if not queue or tp in self._in_flight:
                continue
            leader = cluster.leader_for(tp)
            if leader is None:
                self._expire_leaderless(tp, queue, now)
                cluster.request_update()
                asyncio.get_running_loop().call_later(self._retry_backoff, self._wakeup.set)
                continue
            self._in_flight.add(tp)
            by_node[leader].append(queue.popleft())
        return by_node

    async def _produce(self, node: int, batches: list[ProducerBatch]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        txn = self._txn
        try:
            for batch in batches:
                if txn is not None and batch.data is None:
                    builder: Any = batch.builder
                    builder.producer_id, builder.producer_epoch, builder.base_sequence = \
                        txn.idempotence.stamp(batch.tp, batch.record_count)
                    builder.is_transactional = txn.manager is not None
                by_topic[batch.tp.topic].append(
                    {"index": batch.tp.partition, "records": await batch.seal()})
            body = {"transactional_id": None if txn is None or txn.manager is None
                    else txn.manager.transactional_id, "acks": self._acks,
                    "timeout_ms": int(self._request_timeout * 1000),
                    "topic_data": [{"name": topic, "partition_data": parts}
                                   for topic, parts in by_topic.items()]}
            answer = await self._client.send(node, ApiKey.PRODUCE, body,
                                             expect_response=self._acks != 0)
        except KafkaError as exc:
            for batch in batches:
                self._retry_or_fail(batch, exc)
            return
        except OSError as exc:
            error = KafkaConnectionError(f"produce to node {node}: {exc}")
            for batch in batches:
                self._retry_or_fail(batch, error)
            return
        if self._acks == 0:
            for batch in batches:
                self._complete(batch, -1, -1, -1)
            return
        sending = {batch.tp: batch for batch in batches}
        for topic in answer["responses"]:
            for part in topic["partition_responses"]:
                done = sending.pop(TopicPartition(topic["name"], part["index"]), None)
                if done is None:
                    continue
                code = part["error_code"]
                if code == 0:
                    self._complete(done, part["base_offset"], part["log_append_time_ms"],
                                   part["log_start_offset"])
                elif code == DuplicateSequenceNumberError.errno:
                    self._complete(done, -1, -1, -1)
                else:
                    message = part.get("error_message")
                    self._retry_or_fail(done, error_for_code(code)(
                        f"produce to {done.tp.topic}-{done.tp.partition} on node {node}"
                        + (f": {message}" if message else "")))
        for batch in sending.values():
            self._retry_or_fail(batch, NetworkError(f"node {node} did not answer for "
                                                    f"{batch.tp}"))

    def _complete(self, batch: ProducerBatch, base_offset: int, append_time: int,
                  log_start: int) -> None:
        self._in_flight.discard(batch.tp)
        batch.done(base_offset, append_time, log_start)

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException) -> None:
        self._in_flight.discard(batch.tp)
        if getattr(error, "invalid_metadata", False) or isinstance(error,
                                                                   KafkaConnectionError):
            self._client.cluster.request_update()
        loop = asyncio.get_running_loop()
        retriable = getattr(error, "retriable", False) or isinstance(
            error, (KafkaConnectionError, KafkaTimeoutError))
        if retriable and not self._closed and \
                loop.time() + self._retry_backoff < batch.created + self._request_timeout:
            self._queued[batch.tp].appendleft(batch)
            loop.call_later(self._retry_backoff, self._wakeup.set)
            return
        self._fail(batch, error)

    def _expire_leaderless(self, tp: TopicPartition, queue: deque[ProducerBatch],
                           now: float) -> None:
        """Fail the batches of a partition without a leader that are older than
        ``request_timeout_ms`` with KafkaTimeoutError (aiokafka's rule), so that ``flush()``
        and ``send_and_wait()`` end even if the partition never gets a leader back."""
        while queue and now >= queue[0].created + self._request_timeout:
            batch = queue.popleft()
            self._fail(batch, KafkaTimeoutError(
                f"{tp.topic}-{tp.partition}: {batch.record_count} records expired unsent "
                f"after {int(self._request_timeout * 1000)} ms (request_timeout_ms): the "
                "partition has no leader"))

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        """Fail ``batch`` and, in a transaction, the transaction (it lost records)."""
        txn = self._txn
        if txn is not None:
            builder: Any = batch.builder
            if batch.data is not None:  # stamped: its sequence is now unknown
                txn.batch_failed(builder.producer_id, builder.producer_epoch, error)
            elif txn.manager is not None:
                txn.manager.batch_failed(error)
        batch.failure(error)



class TransactionContext:
    """What :meth:`AIOKafkaProducer.transaction` returns (an async context manager)."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer

    async def __aenter__(self) -> TransactionContext:
        await self._producer.begin_transaction()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            await self._producer.commit_transaction()
            return
        manager = self._producer._transactions().manager
        if manager is not None and manager.state is not State.FATAL_ERROR:
            await self._producer.abort_transaction()
