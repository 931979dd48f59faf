"""The Consumer: kafka-python's API, the Java consumer's behaviour and defaults.

``poll()`` does the work on the caller's thread: it keeps the group membership current
(:mod:`kafkalite.consumer.group`), resolves positions (committed offsets, then
``auto_offset_reset``), returns buffered records (:mod:`kafkalite.consumer.fetcher`) and
sends the next fetches before returning. One background I/O thread does the network and the
heartbeats. A Consumer is not thread-safe: use it from one thread.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from kafkalite.client.client import CLIENT_DEFAULTS, KafkaClient
from kafkalite.client.metrics import ConsumerMetrics
from kafkalite.consumer.commits import CommitCallback
from kafkalite.consumer.config import validate_consumer_config
from kafkalite.consumer.fetcher import Fetcher
from kafkalite.consumer.group import ConsumerCoordinator
from kafkalite.consumer.group_consumer_protocol import ConsumerProtocolCoordinator
from kafkalite.consumer.list_offsets import (
    EARLIEST,
    LATEST,
    STRATEGY_TIMESTAMPS,
    OffsetAndTimestamp,
    await_leaders,
    list_offsets,
)
from kafkalite.consumer.listener import ConsumerRebalanceListener, notify
from kafkalite.consumer.subscription_state import SubscriptionState, SubscriptionType
from kafkalite.errors import (
    ConfigError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
)
from kafkalite.record_iteration import RecordIterator
from kafkalite.structs import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    TopicPartition,
)


def normalize_offsets(
    offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
) -> dict[TopicPartition, OffsetAndMetadata]:
    """Commit offsets as given by users (ints or OffsetAndMetadata) in one checked shape."""
    if not isinstance(offsets, Mapping):
        raise TypeError(f"offsets must be a mapping of TopicPartition to offset, not "
                        f"{type(offsets).__name__}")
    result = {}
    for tp, value in offsets.items():
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"offset keys must be TopicPartitions, got {tp!r}")
        meta = OffsetAndMetadata(value) if isinstance(value, int) and \
            not isinstance(value, bool) else value
        if not isinstance(meta, OffsetAndMetadata) or isinstance(meta.offset, bool) or \
                not isinstance(meta.offset, int):
            raise TypeError(f"the offset for {tp} must be an int or OffsetAndMetadata, "
                            f"not {value!r}")
        if meta.offset < 0:
            raise ValueError(f"the offset for {tp} must be >= 0, not {meta.offset}")
        if meta.metadata is None:  # kafka-python's OffsetAndMetadata(offset, None, -1)
            meta = meta._replace(metadata="")
        if not isinstance(meta.metadata, str):
            raise TypeError(f"the metadata for {tp} must be a str, not {meta.metadata!r}")
        result[tp] = meta
    return result


class Consumer:
    """Reads records from Kafka topics, alone (``assign``) or in a consumer group.

    >>> with Consumer("events", bootstrap_servers="localhost:9092", group_id="app",
    ...               auto_offset_reset="earliest") as consumer:
    ...     for record in consumer:
    ...         print(record.offset, record.value)

    ``config`` takes kafka-python's snake_case names of the Java settings (``group_id``,
    ``enable_auto_commit``, ``auto_offset_reset``, ``max_poll_records``, ...); unknown names
    raise :class:`~kafkalite.errors.ConfigError`. ``consumer_timeout_ms`` ends iteration after
    that long without records (default: iterate forever).
    """

    def __init__(self, *topics: str, bootstrap_servers: str | Sequence[str] = "localhost:9092",
                 consumer_timeout_ms: float | None = None, **config: Any) -> None:
        self.config = validate_consumer_config({"bootstrap_servers": bootstrap_servers,
                                                **config})
        self._records: RecordIterator[ConsumerRecord] = RecordIterator(
            lambda timeout_ms: [r for records in self.poll(timeout_ms=timeout_ms).values()
                                for r in records],
            lambda: self._closed, consumer_timeout_ms)
        self._client = KafkaClient(**{k: v for k, v in self.config.items()
                                      if k in CLIENT_DEFAULTS})
        self._subscriptions = SubscriptionState(self.config["auto_offset_reset"])
        self._fetcher = Fetcher(self._client, self._subscriptions, self.config)
        self._coordinator: ConsumerCoordinator | None = None
        if self.config["group_id"] is not None:
            membership = ConsumerProtocolCoordinator \
                if self.config["group_protocol"] == "consumer" else ConsumerCoordinator
            self._coordinator = membership(self._client, self._subscriptions, self.config,
                                           self._fetcher.wakeup)
        self._request_timeout = self.config["request_timeout_ms"] / 1000
        self._api_timeout = self.config["default_api_timeout_ms"] / 1000
        self._retry_backoff = self.config["retry_backoff_ms"] / 1000
        self._metrics = ConsumerMetrics(self.config["metric_group_prefix"])
        self._closed = False
        self._client.start()
        if topics:
            self.subscribe(topics)

    # -- subscription ----------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str] = (), pattern: str | re.Pattern[str] | None = None,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        """Join the group for ``topics`` (or every topic matching ``pattern``).

        The group assigns the partitions during ``poll()``; ``listener`` hears about each
        rebalance. Calling it again replaces the subscription. Without a ``group_id`` the
        consumer assigns itself every partition of the topics and commits nothing, as
        kafka-python does.
        """
        self._check_open()
        if isinstance(topics, str):
            topics = [topics]
        if listener is not None and not (callable(getattr(listener, "on_partitions_revoked",
                                                          None))
                                         and callable(getattr(listener, "on_partitions_assigned",
                                                              None))):
            raise TypeError("listener must be a ConsumerRebalanceListener")
        topics = list(topics)
        if (pattern is None) == (not topics):
            raise ValueError("give either topics or a pattern to subscribe()")
        if pattern is not None:
            self._subscriptions.subscribe_pattern(pattern, listener)
            self._client.metadata.all_topics = True
        else:
            self._subscriptions.subscribe(topics, listener)
            self._client.metadata.set_topics(self._subscriptions.topics)

    def unsubscribe(self) -> None:
        """Leave the group (committing first with auto commit) and drop every partition."""
        self._check_open()
        if self._coordinator is not None and self._subscriptions.is_auto_assigned:
            self._coordinator.leave_group(time.monotonic() + self._request_timeout)
        self._subscriptions.unsubscribe()
        self._client.metadata.all_topics = False

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions, without group management."""
        self._check_open()
        if self._subscriptions.is_auto_assigned:
            raise IllegalStateError("assign() after subscribe(); call unsubscribe() first")
        self._subscriptions.assign_from_user(partitions)
        self._client.metadata.add_topics(self._subscriptions.topics)

    def assignment(self) -> set[TopicPartition]:
        return self._subscriptions.assigned_partitions()

    def subscription(self) -> set[str]:
        return set(self._subscriptions.topics) if self._subscriptions.is_auto_assigned \
            else set()

    @property
    def generation_id(self) -> int:
        """The group generation this member belongs to; -1 outside a group."""
        return -1 if self._coordinator is None else self._coordinator.generation_id

    @property
    def member_id(self) -> str:
        return "" if self._coordinator is None else self._coordinator.member_id

    # -- polling -----------------------------------------------------------------------------

    def poll(self, timeout_ms: float = 0, max_records: int | None = None,
             update_offsets: bool = True) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records by partition, waiting up to ``timeout_ms`` for some; ``{}`` if none came.

        Also where rebalances, listener callbacks, async commit callbacks and auto commits
        happen: call it at least every ``max_poll_interval_ms`` or the group moves on. With
        ``update_offsets=False`` the positions stay before the returned records, so the next
        poll returns them again.
        """
        self._check_open()
        if self._subscriptions.type is SubscriptionType.NONE:
            raise IllegalStateError("poll() needs subscribe() or assign() first")
        if max_records is None:
            max_records = self.config["max_poll_records"]
        elif isinstance(max_records, bool) or not isinstance(max_records, int) or \
                max_records < 1:
            raise ValueError(f"max_records must be a positive integer, not {max_records!r}")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or \
                timeout_ms < 0:
            raise ValueError(f"timeout_ms must be a non-negative number, not {timeout_ms!r}")
        records = self._poll(timeout_ms, max_records)
        if records and not update_offsets:
            for tp, batch in records.items():
                self._subscriptions.seek(tp, batch[0].offset)
        elif records:  # counted without a per-record loop
            metrics = self._metrics
            metrics.polls += 1
            metrics.records += sum(map(len, records.values()))
            metrics.bytes = self._fetcher.returned_bytes
            metrics.lag_max = self._fetcher.records_lag_max
        return records

    def poll_arrow(self, timeout_ms: float = 0, max_records: int | None = None, *,
                   timestamp_type: bool = False) -> Any:
        """Like :meth:`poll`, but the records come as one ``pyarrow.RecordBatch`` with the
        columns key, value, topic, partition, offset, timestamp and headers (see
        :mod:`kafkalite.arrow`), built from the fetched batches without a ConsumerRecord
        per record; zero rows if none came. Keys and values are the raw bytes: the
        configured deserializers are not applied. ``timestamp_type=True`` adds a
        ``timestamp_type`` column (0 CreateTime, 1 LogAppendTime). Needs pyarrow
        (``pip install 'kafkalite[arrow]'``)."""
        from kafkalite.arrow import record_batch, require_pyarrow

        require_pyarrow()
        self._check_open()
        if self._subscriptions.type is SubscriptionType.NONE:
            raise IllegalStateError("poll_arrow() needs subscribe() or assign() first")
        if max_records is None:
            max_records = self.config["max_poll_records"]
        elif isinstance(max_records, bool) or not isinstance(max_records, int) or \
                max_records < 1:
            raise ValueError(f"max_records must be a positive integer, not {max_records!r}")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or \
                timeout_ms < 0:
            raise ValueError(f"timeout_ms must be a non-negative number, not {timeout_ms!r}")
        chunks = self._poll(timeout_ms, max_records, self._fetcher.fetched_chunks)
        batch = record_batch([(tp.topic, tp.partition, chunk.timestamp_type, chunk.records)
                              for tp, runs in chunks.items() for chunk in runs],
                             timestamp_type=timestamp_type)
        if batch.num_rows:
            import pyarrow.compute as pc

            fetcher = self._fetcher
            for name in ("key", "value"):
                fetcher.returned_bytes += pc.sum(pc.binary_length(batch[name])).as_py() or 0
            metrics = self._metrics
            metrics.polls += 1
            metrics.records += batch.num_rows
            metrics.bytes = fetcher.returned_bytes
        return batch

    def _poll(self, timeout_ms: float, max_records: int,
              take: Callable[[int], dict[TopicPartition, Any]] | None = None,
              ) -> dict[TopicPartition, Any]:
        """Records (or, with ``take``, what it returns) from the buffered fetches, waiting
        up to ``timeout_ms`` for some."""
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        fetcher = self._fetcher
        if take is None:
            take = fetcher.fetched_records
        while True:
            if self._coordinator is not None:
                self._coordinator.poll(deadline)
            elif self._subscriptions.is_auto_assigned:
                self._assign_all_subscribed()
            self._update_positions()
            records = take(max_records)
            fetcher.send_fetches()  # before returning: the broker works while the app does
            if records:
                return records
            self._check_ever_reachable()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            if fetcher.leaderless_ticket is not None:
                # No Fetch can wake us before the leader is known: wait for the refresh,
                # in steps short enough that the group's wake-ups are not missed for long.
                with contextlib.suppress(KafkaTimeoutError):
                    self._client.metadata.await_update(fetcher.leaderless_ticket,
                                                       min(remaining, self._retry_backoff))
            elif not fetcher.has_buffered_data():
                fetcher.wait_for_data(min(remaining, 1.0))

    def _check_ever_reachable(self) -> None:
        """A consumer that has never reached a broker raises after ``default_api_timeout_ms``
        of failed connections, naming each address and its error, instead of returning no
        records forever: a wrong port, CA or ``security_protocol`` is not a quiet topic.
        Once connected, an outage is waited out as before (polls return ``{}``)."""
        since = self._client.unreachable_since()
        timeout_ms = self.config["default_api_timeout_ms"]
        if since is not None and time.monotonic() - since >= timeout_ms / 1000:
            raise self._client.timeout_error(
                f"no broker reached within default_api_timeout_ms ({timeout_ms} ms)")

    def __iter__(self) -> Consumer:
        return self

    def __next__(self) -> ConsumerRecord:
        return next(self._records)

    def _assign_all_subscribed(self) -> None:
        """Without a group: own every partition of the subscribed (or matching) topics."""
        subscriptions, cluster = self._subscriptions, self._client.cluster
        if subscriptions.pattern is not None:
            subscriptions.change_topics(subscriptions.matching_topics(cluster.topics()))
        wanted = {TopicPartition(topic, p) for topic in subscriptions.topics
                  for p in cluster.partitions_for_topic(topic) or ()}
        current = subscriptions.assigned_partitions()
        if wanted == current:
            return
        listener = subscriptions.listener
        if listener is not None and current:
            notify(listener, "on_partitions_revoked", current)
        subscriptions.assign_from_subscribed(wanted)
        if listener is not None:
            notify(listener, "on_partitions_assigned", wanted)

    def _update_positions(self) -> None:
        """Give every assigned partition a position: committed offset, else the reset."""
        subscriptions = self._subscriptions
        missing = subscriptions.missing_positions()
        if missing:
            committed: Mapping[TopicPartition, OffsetAndMetadata] = {}
            if self._coordinator is not None:
                committed = self._coordinator.fetch_committed(
                    missing, time.monotonic() + self._api_timeout)
            for tp in missing:
                if tp in committed:
                    subscriptions.seek(tp, committed[tp].offset)
                else:
                    subscriptions.request_reset(tp)
        resets = subscriptions.awaiting_reset()
        if not resets:
            return
        undefined = sorted(tp for tp, strategy in resets.items() if strategy == "none")
        if undefined:
            raise NoOffsetForPartitionError(
                f"no committed offset for {undefined} and auto_offset_reset is 'none'")
        found = list_offsets(self._client,
                             {tp: STRATEGY_TIMESTAMPS[s] for tp, s in resets.items()},
                             isolation_level=self.config["isolation_level"],
                             timeout=self._api_timeout)
        for tp, result in found.items():
            if subscriptions.is_assigned(tp) and subscriptions.state(tp).reset_strategy:
                subscriptions.seek(tp, 0 if result is None else result.offset)

    # -- positions -----------------------------------------------------------------------------

    def position(self, partition: TopicPartition, timeout_ms: int | None = None) -> int:
        """The offset of the next record ``poll()`` returns for ``partition`` (looked up if unknown,
        within ``timeout_ms``, default ``default_api_timeout_ms``)."""
        self._check_open()
        if self._subscriptions.position(partition) is None:
            with self._api_timeout_of(timeout_ms):
                self._update_positions()
        position = self._subscriptions.position(partition)
        assert position is not None
        return position

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark from the last fetch response (the offset the next
        produced record gets); None before the first fetch of ``partition``."""
        self._check_open()
        if not isinstance(partition, TopicPartition):
            raise TypeError(f"highwater() takes a TopicPartition, not {partition!r}")
        high = self._subscriptions.state(partition).high_watermark
        return None if high < 0 else high

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self._check_open()
        self._subscriptions.seek(partition, offset)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Read from the first offset (of every assigned partition when none is given)."""
        for tp in partitions or self.assignment():
            self._subscriptions.request_reset(tp, "earliest")

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        for tp in partitions or self.assignment():
            self._subscriptions.request_reset(tp, "latest")

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching these partitions (their group membership stays) until resumed."""
        for tp in partitions:
            self._subscriptions.pause(tp)

    def resume(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._subscriptions.resume(tp)

    def paused(self) -> set[TopicPartition]:
        return self._subscriptions.paused()

    # -- commits -------------------------------------------------------------------------------

    def _require_group(self, what: str) -> ConsumerCoordinator:
        self._check_open()
        if self._coordinator is None:
            raise ConfigError("group_id", f"{what} needs a group_id")
        return self._coordinator

    def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
               timeout_ms: int | None = None) -> None:
        """Commit ``offsets`` (default: the positions of everything ``poll`` returned) and wait.

        Raises :class:`~kafkalite.consumer.commits.CommitFailedError` when the group has moved
        on without this member.
        """
        coordinator = self._require_group("commit()")
        checked = None if offsets is None else normalize_offsets(offsets)
        started = time.monotonic()
        coordinator.commit_sync(checked, started + self._timeout_of(timeout_ms))
        self._metrics.committed_after(time.monotonic() - started)

    def commit_async(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Commit without waiting; ``callback(offsets, error_or_None)`` runs in a later poll."""
        coordinator = self._require_group("commit_async()")
        checked = None if offsets is None else normalize_offsets(offsets)
        coordinator.commit_async(checked,
                                 callback or self.config["default_offset_commit_callback"])

    def committed(self, partition: TopicPartition, metadata: bool = False,
                  timeout_ms: int | None = None) -> int | OffsetAndMetadata | None:
        """The group's committed offset for ``partition`` (None without one); with ``metadata=True``
        the whole :class:`OffsetAndMetadata`."""
        coordinator = self._require_group("committed()")
        found = coordinator.fetch_committed(
            [partition], time.monotonic() + self._timeout_of(timeout_ms)).get(partition)
        if found is None or metadata:
            return found
        return found.offset

    # -- cluster queries ---------------------------------------------------------------------

    def _timeout_of(self, timeout_ms: float | None) -> float:
        """Seconds for a call's ``timeout_ms`` (None: ``default_api_timeout_ms``)."""
        if timeout_ms is None:
            return self._api_timeout
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or \
                timeout_ms < 0:
            raise ValueError(f"timeout_ms must be a non-negative number, not {timeout_ms!r}")
        return timeout_ms / 1000

    @contextlib.contextmanager
    def _api_timeout_of(self, timeout_ms: int | None) -> Iterator[None]:
        """Run a block whose lookups use ``timeout_ms`` instead of the default API timeout."""
        saved, self._api_timeout = self._api_timeout, self._timeout_of(timeout_ms)
        try:
            yield
        finally:
            self._api_timeout = saved

    def _offsets_at(self, partitions: Iterable[TopicPartition], timestamp: int,
                    timeout_ms: int | None) -> dict[TopicPartition, int]:
        found = list_offsets(self._client, dict.fromkeys(partitions, timestamp),
                             isolation_level=self.config["isolation_level"],
                             timeout=self._timeout_of(timeout_ms))
        return {tp: -1 if result is None else result.offset for tp, result in found.items()}

    def beginning_offsets(self, partitions: Iterable[TopicPartition],
                          timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        self._check_open()
        return self._offsets_at(partitions, EARLIEST, timeout_ms)

    def end_offsets(self, partitions: Iterable[TopicPartition],
                    timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        """The offset after the last record (the last stable one under read_committed)."""
        self._check_open()
        return self._offsets_at(partitions, LATEST, timeout_ms)

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int],
                          timeout_ms: int | None = None,
                          ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset at or after each timestamp (ms); None when none is that recent."""
        self._check_open()
        for tp, ts in timestamps.items():
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise ValueError(f"the timestamp for {tp} must be a non-negative int, not {ts!r}")
        return list_offsets(self._client, dict(timestamps),
                            isolation_level=self.config["isolation_level"],
                            timeout=self._timeout_of(timeout_ms))

    def partitions_for_topic(self, topic: str, timeout_ms: int | None = None) -> set[int] | None:
        """The topic's partition ids, None if the topic does not exist; waits at most
        ``timeout_ms`` (default ``default_api_timeout_ms``, as the Java client's
        ``partitionsFor``) for the metadata."""
        self._check_open()
        cluster = self._client.cluster
        timeout = self._timeout_of(timeout_ms)
        try:
            await_leaders(self._client, {TopicPartition(topic, 0)},
                          time.monotonic() + timeout)
        except KafkaError:
            if cluster.partitions_for_topic(topic) is None:
                return None
        partitions = cluster.partitions_for_topic(topic)
        return None if partitions is None else set(partitions)

    def topics(self) -> set[str]:
        """Every topic in the cluster (internal ones excluded when exclude_internal_topics)."""
        self._check_open()
        metadata = self._client.metadata
        previous = metadata.all_topics
        metadata.all_topics = True
        try:
            metadata.await_update(metadata.request_update(), self._api_timeout)
        finally:
            metadata.all_topics = previous
        return self._client.cluster.topics(
            exclude_internal=self.config["exclude_internal_topics"])

    # -- lifecycle -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the consumer is closed")

    def close(self, autocommit: bool = True, timeout_ms: float | None = None,
              timeout: float | None = None) -> None:
        """Commit (with auto commit), leave the group and close connections, within
        ``timeout_ms`` (kafka-python's name; ``timeout`` in seconds works too; default
        ``request_timeout_ms``)."""
        if self._closed:
            return
        self._closed = True
        if timeout_ms is not None:
            timeout = self._timeout_of(timeout_ms)
        try:
            if self._coordinator is not None:
                deadline = time.monotonic() + (self._request_timeout if timeout is None
                                               else timeout)
                with contextlib.suppress(KafkaTimeoutError):
                    self._coordinator.close(deadline, commit=autocommit)
        finally:
            self._client.close()

    # -- introspection (kafka-python's) -------------------------------------------------------

    def bootstrap_connected(self) -> bool:
        """True once the client has cluster metadata from a broker it reached."""
        return bool(self._client.cluster.brokers())

    def bootstrap(self, timeout_ms: int | None = None, refresh: bool = False) -> None:
        """Wait until cluster metadata is known (``refresh``: fetch it again anyway)."""
        self._check_open()
        if self.bootstrap_connected() and not refresh:
            return
        metadata = self._client.metadata
        timeout = None if timeout_ms is None else self._timeout_of(timeout_ms)
        metadata.await_update(metadata.request_update(), timeout)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's place in its group (``group_id=None`` outside any group)."""
        if self._coordinator is None:
            return ConsumerGroupMetadata(None)
        coordinator = self._coordinator
        return ConsumerGroupMetadata(coordinator.group_id, coordinator.generation_id,
                                     coordinator.member_id, self.config["group_instance_id"],
                                     f"<{coordinator.state.value}>")

    def metrics(self, raw: bool = False) -> dict[str, Any]:
        """kafka-python's nested shape: ``{group: {name: value}}`` with totals and rates since
        start; ``{}`` when ``metrics_enabled`` is off. ``raw=True`` gives the flat counters."""
        if not self.config["metrics_enabled"]:
            return {}
        self._metrics.assigned_partitions = len(self._subscriptions.assigned_partitions())
        return self._metrics.as_dict(self._client, raw, self._fetcher.counters)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


KafkaConsumer = Consumer
"""kafka-python's name for :class:`Consumer`: the same class."""
