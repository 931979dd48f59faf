"""The Producer: kafka-python's API, the Java producer's behaviour and defaults.

``send()`` serializes, picks a partition, appends to the accumulator and returns a future at
once; one background I/O thread batches, compresses, sends and retries. See
:mod:`kafkalite.producer.accumulator` and :mod:`kafkalite.producer.sender` for how.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from time import time_ns as _time_ns
from types import TracebackType
from typing import Any

from kafkalite.client.client import CLIENT_DEFAULTS, KafkaClient
from kafkalite.client.connection import BrokerConnection
from kafkalite.client.metrics import producer_metrics
from kafkalite.errors import (
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    UnsupportedFeatureError,
)
from kafkalite.producer.accumulator import RecordAccumulator
from kafkalite.producer.batch import (
    FutureBatchMetadata,
    FutureRecordMetadata,
    RecordAppend,
    failed_record_future,
)
from kafkalite.producer.config import validate_producer_config
from kafkalite.producer.partitioners import Partitioner, resolve_partitioner, unkeyed_choices
from kafkalite.producer.sender import Sender, record_magic_for
from kafkalite.producer.transaction_driver import TransactionDriver
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kafkalite.records import estimate_record_size
from kafkalite.records.builder import ATOMIC_APPENDS, BinaryColumn
from kafkalite.serde import BytesSerializer, resolve_serializer
from kafkalite.structs import Header, TopicPartition

log = logging.getLogger(__name__)

_SIZE_CHECK_MARGIN = 1024
"""Records whose key+value stay this far below max_request_size skip the exact size check."""


class Producer:
    """Publishes records to Kafka topics; thread-safe, share one per process.

    >>> with Producer(bootstrap_servers="localhost:9092") as producer:
    ...     producer.send("events", b"payload", key=b"user-1").get(timeout=10)

    ``config`` takes kafka-python's snake_case names of the Java settings (``acks``,
    ``batch_size``, ``linger_ms``, ``compression_type``, ...); unknown names raise
    :class:`~kafkalite.errors.ConfigError`.
    """

    def __init__(self, bootstrap_servers: str | Sequence[str] = "localhost:9092",
                 **config: Any) -> None:
        self.config = validate_producer_config({"bootstrap_servers": bootstrap_servers, **config})
        self._key_serializer = resolve_serializer(self.config["key_serializer"], "key_serializer")
        self._value_serializer = resolve_serializer(self.config["value_serializer"],
                                                    "value_serializer")
        self._raw_keys = isinstance(self._key_serializer, BytesSerializer)
        self._raw_values = isinstance(self._value_serializer, BytesSerializer)
        self._partitioner: Partitioner = resolve_partitioner(self.config["partitioner"])
        self._partitioner.configure(self.config)
        self._sticky = type(self._partitioner).on_new_batch is not Partitioner.on_new_batch
        self._max_request_size: int = self.config["max_request_size"]
        self._max_block = self.config["max_block_ms"] / 1000
        self._client = KafkaClient(**{k: v for k, v in self.config.items()
                                      if k in CLIENT_DEFAULTS})
        self._cluster = self._client.cluster
        self._accumulator = RecordAccumulator(
            batch_size=self.config["batch_size"],
            max_request_size=self._max_request_size,
            linger_ms=self.config["linger_ms"],
            compression_type=self.config["compression_type"],
            buffer_memory=self.config["buffer_memory"],
            max_block_ms=self.config["max_block_ms"],
            delivery_timeout_ms=self.config["delivery_timeout_ms"],
            retry_backoff_ms=self.config["retry_backoff_ms"],
        )
        self._accumulator.build_when_full = not self.config["enable_idempotence"]
        self._sender = Sender(self._client, self._accumulator, self.config)
        self._transactions = (None if self.config["transactional_id"] is None else
                              TransactionDriver(self._client, self._sender, self.config,
                                                self.flush))
        choices = unkeyed_choices(self._partitioner, self._cluster)
        self._unkeyed_choice = ({} if choices is None else choices).get
        """The partition for an unkeyed record without calling the partitioner (None when
        it must be asked): the built-in sticky partitioners' live choice per topic."""
        self._unkeyed_appends: dict[str, RecordAppend] = {}
        """The open batch's append of each topic's sticky partition, which ``send()`` calls
        for an unkeyed bytes record without the accumulator's lock or any other step: the
        partition is the one the full path would choose, and the batch declines (sealed)
        from the moment it is full, drained, expired or aborted. Only for raw bytes, no
        transactions and the built-in sticky partitioners, with the compiled writer."""
        self._unkeyed_hot_path = (ATOMIC_APPENDS and choices is not None and self._raw_keys
                                  and self._raw_values and self._transactions is None)
        self._unkeyed_value_limit = self._max_request_size - _SIZE_CHECK_MARGIN
        if self._unkeyed_hot_path:  # a sticky choice dropped at a metadata update
            self._cluster.add_listener(self._forget_unkeyed_appends)
        self._client.ready_listeners.append(self._on_connection_ready)
        self._client.add_poll_hook(self._sender.run_once)
        self._partitions: dict[tuple[str, int], TopicPartition] = {}
        self._closed = False
        self._client.start()

    def _forget_unkeyed_appends(self, cluster: object) -> None:
        """Metadata listener: the next unkeyed record of each topic takes the full path."""
        self._unkeyed_appends.clear()

    def _on_connection_ready(self, conn: BrokerConnection) -> None:
        """New batches use the record format the oldest connected broker can take."""
        try:
            magic = record_magic_for(conn.api_version(ApiKey.PRODUCE))
        except KafkaError:
            return
        self._accumulator.magic = min(self._accumulator.magic, magic)

    # -- sending ---------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> FutureRecordMetadata:
        """Queue one record; the future's ``get()`` returns its :class:`RecordMetadata`.

        Blocks only while the topic's metadata is unknown or ``buffer_memory`` is full (each
        up to ``max_block_ms``). Serializer, partition and size errors raise or fail the
        future with a typed error naming the problem.
        """
        if key is None and partition is None and headers is None and value.__class__ is bytes:
            # The hot path for unkeyed bytes (see _unkeyed_appends): one dict lookup and one
            # C call; anything it declines takes the full path below.
            append = self._unkeyed_appends.get(topic)
            if append is not None and len(value) <= self._unkeyed_value_limit:
                future = append(_time_ns() // 1_000_000 if timestamp_ms is None
                                else timestamp_ms, None, value, None)
                if future is not None:
                    return future
        if self._closed:
            raise KafkaError("send() on a closed producer")
        key_bytes = key if self._raw_keys and (key is None or key.__class__ is bytes) \
            else self._key_serializer.serialize(topic, key)
        value_bytes = value if self._raw_values and (value is None or value.__class__ is bytes) \
            else self._value_serializer.serialize(topic, value)
        if headers is not None:
            headers = _checked_headers(headers)

        cluster = self._cluster
        partitions = cluster.partitions_for_topic(topic)
        if partitions is None:
            partitions = self._wait_on_metadata(topic)
        chosen = partition is None
        if chosen:
            partition = self._unkeyed_choice(topic) if key_bytes is None else None
            if partition is None:
                partition = self._partitioner.partition(topic, key, key_bytes, value,
                                                        value_bytes, cluster)
        if partition not in partitions:
            raise UnknownTopicOrPartitionError(
                f"partition {partition} of topic {topic!r}: the topic has partitions "
                f"0..{len(partitions) - 1}")
        tp = self._partitions.get((topic, partition)) or self._topic_partition(topic, partition)
        if self._transactions is not None:
            self._transactions.add_partition(tp)

        size = (len(key_bytes) if key_bytes else 0) + (len(value_bytes) if value_bytes else 0)
        if size + _SIZE_CHECK_MARGIN > self._max_request_size or headers:
            error = self._size_error(key_bytes, value_bytes, headers)
            if error is not None:
                return failed_record_future(tp, error)
        timestamp = timestamp_ms if timestamp_ms is not None else _time_ns() // 1_000_000

        future = self._accumulator.append(tp, timestamp, key_bytes, value_bytes, headers,
                                          chosen and self._sticky)
        if future is None:  # the sticky partition's batch is full: move on first
            self._partitioner.on_new_batch(topic, cluster, tp.partition)
            partition = self._partitioner.partition(topic, key, key_bytes, value, value_bytes,
                                                    cluster)
            tp = self._topic_partition(topic, partition)
            if self._transactions is not None:
                self._transactions.add_partition(tp)
            future = self._accumulator.append(tp, timestamp, key_bytes, value_bytes, headers)
            assert future is not None
        if not future[2]:  # the first record of a new batch (see opens_batch)
            self._client.wakeup()
        if chosen and key_bytes is None and headers is None and self._unkeyed_hot_path \
                and self._unkeyed_choice(topic) == tp.partition:
            append = self._accumulator.lock_free_append(tp)
            if append is not None:
                self._unkeyed_appends[topic] = append
        return future

    def send_batch(
        self,
        topic: str,
        values: Any,
        keys: Any = None,
        partition: int | None = None,
        headers: Sequence[Sequence[Header] | None] | None = None,
        timestamps: int | Sequence[int] | None = None,
    ) -> list[FutureBatchMetadata]:
        """Queue many records at once; one future per batch they went into.

        ``values`` is a sequence of bytes (or None), a pyarrow binary/string Array, or a
        pyarrow Table/RecordBatch with a ``value`` column (and optionally ``key``,
        ``headers`` and ``timestamp`` columns, as :meth:`Consumer.poll_arrow` returns them).
        ``keys`` and ``headers`` (one list of ``(str, bytes | None)`` pairs or None per
        record) run parallel to ``values``; ``timestamps`` is one int (ms) for all records
        or one per record (default: now). Without ``partition`` keyed records go where
        :meth:`send` would put them and unkeyed ones fill one batch of a partition at a
        time. Each future's ``get()`` returns a :class:`BatchMetadata`: records of one
        partition keep their input order, at ``base_offset`` onwards.

        The configured serializers apply when they are not the bytes default. Blocks like
        :meth:`send` for metadata and ``buffer_memory``.
        """
        if self._closed:
            raise KafkaError("send_batch() on a closed producer")
        if any(_is_arrow_like(column) for column in (values, keys, headers, timestamps)):
            from kafkalite.arrow import columns_from_arrow

            values, keys, headers, timestamps = columns_from_arrow(values, keys, headers,
                                                                   timestamps)
        count = len(values)
        if keys is not None and len(keys) != count:
            raise ValueError(f"send_batch got {len(keys)} keys for {count} values")
        if headers is not None:
            if len(headers) != count:
                raise ValueError(f"send_batch got {len(headers)} header lists for {count} "
                                 "values")
            headers = [None if h is None else _checked_headers(h) for h in headers]
            if not any(headers):
                headers = None
        if timestamps is None or isinstance(timestamps, int):
            stamp = _time_ns() // 1_000_000 if timestamps is None else timestamps
            timestamps = [stamp] * count
        elif len(timestamps) != count:
            raise ValueError(f"send_batch got {len(timestamps)} timestamps for {count} values")
        # Arrow input stays in its buffers (BinaryColumn) when no serializer runs.
        raw_values = values if self._raw_values and isinstance(values, BinaryColumn) else \
            list(values) if self._raw_values else [
                self._value_serializer.serialize(topic, value) for value in values]
        raw_keys = (BinaryColumn.nulls(count) if isinstance(raw_values, BinaryColumn)
                    else [None] * count) if keys is None else \
            keys if self._raw_keys and isinstance(keys, BinaryColumn) else \
            list(keys) if self._raw_keys else [
                self._key_serializer.serialize(topic, key) for key in keys]
        self._check_batch_sizes(raw_keys, raw_values, headers)

        cluster = self._cluster
        partitions = cluster.partitions_for_topic(topic)
        if partitions is None:
            partitions = self._wait_on_metadata(topic)
        if partition is not None and partition not in partitions:
            raise UnknownTopicOrPartitionError(
                f"partition {partition} of topic {topic!r}: the topic has partitions "
                f"0..{len(partitions) - 1}")
        accumulator = self._accumulator
        futures: list[FutureBatchMetadata] = []
        if partition is not None or (keys is None and self._sticky):
            index = 0
            while index < count:  # one partition per batch: the sticky rule, in bulk
                chosen = partition if partition is not None else self._partitioner.partition(
                    topic, None, None, None, None, cluster)
                tp = self._topic_partition(topic, chosen)
                if self._transactions is not None:
                    self._transactions.add_partition(tp)
                made, index = accumulator.append_many(tp, timestamps, raw_keys, raw_values,
                                                      headers, index, count,
                                                      one_batch=partition is None)
                futures += made
                if index < count and partition is None:
                    self._partitioner.on_new_batch(topic, cluster, chosen)
        else:
            for tp, indices in self._partition_records(topic, keys, values, raw_keys,
                                                       raw_values).items():
                if self._transactions is not None:
                    self._transactions.add_partition(tp)
                made, _ = accumulator.append_many(
                    tp, [timestamps[i] for i in indices], [raw_keys[i] for i in indices],
                    [raw_values[i] for i in indices],
                    None if headers is None else [headers[i] for i in indices], 0, len(indices))
                futures += made
        self._client.wakeup()
        return futures

    def _partition_records(self, topic: str, keys: Any, values: Any, raw_keys: Sequence[Any],
                           raw_values: Sequence[Any]) -> dict[TopicPartition, list[int]]:
        """Record indices by partition, chosen per record by the partitioner."""
        cluster = self._cluster
        partition_of = self._partitioner.partition
        by_partition: dict[TopicPartition, list[int]] = {}
        for index in range(len(raw_values)):
            chosen = partition_of(topic, None if keys is None else keys[index], raw_keys[index],
                                  values[index], raw_values[index], cluster)
            by_partition.setdefault(self._topic_partition(topic, chosen), []).append(index)
        return by_partition

    def _check_batch_sizes(self, keys: Sequence[Any], values: Sequence[Any],
                           headers: list[Any] | None) -> None:
        """send()'s size rule for every record of a send_batch, before any is queued."""
        limit = self._max_request_size - _SIZE_CHECK_MARGIN
        largest = _largest(values) + _largest(keys)
        if largest <= limit and headers is None:
            return
        for index, (key, value) in enumerate(zip(keys, values, strict=True)):
            error = self._size_error(key, value, None if headers is None else headers[index])
            if error is not None:
                raise MessageSizeTooLargeError(f"send_batch record {index}: {error}")

    def _topic_partition(self, topic: str, partition: int) -> TopicPartition:
        """One shared TopicPartition per partition: building a NamedTuple per record shows
        in the send loop's profile."""
        key = (topic, partition)
        tp = self._partitions.get(key)
        if tp is None:
            tp = self._partitions[key] = TopicPartition(topic, partition)
        return tp

    def _size_error(self, key: bytes | None, value: bytes | None,
                    headers: Sequence[Header] | None) -> KafkaError | None:
        size = estimate_record_size(key, value, headers, magic=self._accumulator.magic)
        if size > self._max_request_size:
            return MessageSizeTooLargeError(
                f"the record is {size} bytes serialized, above max_request_size "
                f"({self._max_request_size})")
        if size > self.config["buffer_memory"]:
            return MessageSizeTooLargeError(
                f"the record is {size} bytes serialized, above buffer_memory "
                f"({self.config['buffer_memory']})")
        return None

    def _wait_on_metadata(self, topic: str) -> frozenset[int]:
        """Fetch metadata for a topic seen for the first time, up to ``max_block_ms``."""
        metadata = self._client.metadata
        deadline = time.monotonic() + self._max_block
        metadata.add_topics([topic])
        while True:
            partitions = self._cluster.partitions_for_topic(topic)
            if partitions:
                return partitions
            if topic in self._cluster.unauthorized_topics():
                raise TopicAuthorizationFailedError(f"topic {topic!r}")
            if topic in self._cluster.invalid_topics():
                raise InvalidTopicError(f"topic {topic!r}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._client.timeout_error(
                    f"no metadata for topic {topic!r} within max_block_ms "
                    f"({self.config['max_block_ms']} ms)")
            version = metadata.request_update()
            try:
                metadata.await_update(version, remaining)
            except KafkaTimeoutError:
                continue

    def partitions_for(self, topic: str) -> set[int]:
        """The topic's partition ids (fetching metadata if needed, up to ``max_block_ms``)."""
        partitions = self._cluster.partitions_for_topic(topic)
        return set(partitions if partitions else self._wait_on_metadata(topic))

    @classmethod
    def max_usable_produce_magic(cls, api_version: tuple[int, ...]) -> int:
        """The newest record format (magic) a broker of Kafka release ``api_version`` reads:
        2 from 0.11, 1 from 0.10, else 0. kafkalite picks the format from the Produce version
        it negotiates; this answers kafka-python's question for programs that ask it."""
        return 2 if api_version >= (0, 11) else 1 if api_version >= (0, 10, 0) else 0

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is acknowledged or failed.

        Raises :class:`KafkaTimeoutError` if that takes longer than ``timeout`` seconds.
        """
        batches = self._accumulator.begin_flush()
        self._client.wakeup()
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            for batch in batches:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
                if not batch.future.wait(remaining):
                    raise self._client.timeout_error(
                        f"flush did not finish within {timeout} s")
        finally:
            self._accumulator.end_flush()

    def close(self, timeout: float | None = None, null_logger: bool = False) -> None:
        """Deliver what is queued (up to ``timeout`` s), then fail the rest and stop.

        ``null_logger`` is kafka-python's (for closing at interpreter exit) and has no effect.
        """
        if self._closed:
            return
        self._closed = True
        self._unkeyed_hot_path = False
        self._unkeyed_appends.clear()
        self._accumulator.close()
        try:
            self.flush(timeout)
        except KafkaTimeoutError:
            log.warning("producer closed with %d batches undelivered",
                        self._accumulator.incomplete_count)
        error = KafkaError("the producer was closed before the record was delivered")
        self._client.call_soon(lambda: self._sender.abort(error))
        self._client.close()
        self._partitioner.close()

    def metrics(self, raw: bool = False) -> dict[str, Any]:
        """kafka-python's nested shape, ``{"producer-metrics": {name: value}}``, with Java's
        names, totals and rates since start; ``{}`` when ``metrics_enabled`` is off.

        ``raw=True`` gives the flat counters: requests, batches, records, bytes, retries,
        errors, expired, incomplete_batches.
        """
        if not self.config["metrics_enabled"]:
            return {}
        counters = self._sender.metrics.as_dict()
        incomplete = self._accumulator.incomplete_count
        if raw:
            return {**counters, "incomplete_batches": incomplete,
                    "metadata_version": self._cluster.version}
        return producer_metrics(self._client, counters, incomplete)

    def bootstrap_connected(self) -> bool:
        """True once the client has cluster metadata from a broker it reached."""
        return bool(self._cluster.brokers())

    # -- transactions (kafka-python's methods; see kafkalite.producer.transactions) --------

    def _transactional(self, method: str) -> TransactionDriver:
        if self._transactions is None:
            raise UnsupportedFeatureError(f"Producer.{method}() needs transactional_id")
        return self._transactions

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get this transactional id's producer id, fencing older producers with it."""
        self._transactional("init_transactions").init_transactions(timeout)

    def begin_transaction(self) -> None:
        self._transactional("begin_transaction").begin_transaction()

    def send_offsets_to_transaction(self, offsets: Any, group_metadata: Any,
                                    timeout: float | None = None) -> None:
        """Commit a consumer group's ``offsets`` ({TopicPartition: offset or
        OffsetAndMetadata}) as part of the transaction; ``group_metadata`` is
        ``Consumer.group_metadata()`` (or a group id)."""
        self._transactional("send_offsets_to_transaction").send_offsets_to_transaction(
            offsets, group_metadata, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Deliver every record, then commit; all of it becomes visible at once."""
        self._transactional("commit_transaction").commit_transaction(timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: read_committed consumers never see the transaction's records."""
        self._transactional("abort_transaction").abort_transaction(timeout)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


KafkaProducer = Producer
"""kafka-python's name for :class:`Producer`: the same class."""


def _largest(column: Sequence[bytes | None]) -> int:
    """The size of the largest key or value."""
    if isinstance(column, BinaryColumn):
        return column.max_size
    return max(map(len, filter(None, column)), default=0)


def _is_arrow_like(column: Any) -> bool:
    """A pyarrow Array, ChunkedArray, Table or RecordBatch (checked without importing
    pyarrow, which stays optional)."""
    return type(column).__module__.startswith("pyarrow")


def _checked_headers(headers: Sequence[Header]) -> list[Header]:
    checked = []
    for item in headers:
        try:
            name, value = item
        except (TypeError, ValueError):
            raise TypeError(f"headers must be (str, bytes | None) pairs, got {item!r}") from None
        if not isinstance(name, str) or not (value is None or isinstance(value, bytes)):
            raise TypeError(f"headers must be (str, bytes | None) pairs, got {item!r}")
        checked.append((name, value))
    return checked
