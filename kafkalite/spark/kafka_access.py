"""The source's two uses of a kafkalite Consumer, neither of which joins a group.

- :class:`OffsetResolver` (driver): which partitions the options select and which offsets
  ``earliest`` / ``latest`` / a timestamp / a JSON map mean for them right now.
- :func:`read_range` (executor task): exactly the records of one offset range, via
  ``assign()`` + ``seek()``, so a task reads the same records however often Spark retries it.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from kafkalite.errors import BrokerUnreachableError, ConfigError, KafkaError, KafkaTimeoutError
from kafkalite.protocol.errors import OffsetOutOfRangeError
from kafkalite.spark.offsets import EARLIEST, LATEST, OffsetSpec, PartitionOffsets
from kafkalite.spark.options import ReadOptions, TimestampStrategy, TopicSelection
from kafkalite.spark.planning import OffsetRange
from kafkalite.spark.schema import ArrowBatchBuilder
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)
T = TypeVar("T")

ARROW_BATCH_RECORDS = 20_000
"""Records per Arrow batch handed to Spark (the consumer's ``max_poll_records``, as each
``poll_arrow`` becomes one batch): large enough to amortise the per-batch cost."""

_SOURCE_CLIENT_SETTINGS: Mapping[str, Any] = {
    "enable_auto_commit": False,
    "auto_offset_reset": "none",
}
_TUNABLE_DEFAULTS: Mapping[str, Any] = {"max_poll_records": ARROW_BATCH_RECORDS}


class DataLossError(KafkaError):
    """Offsets the query needs are gone (retention, deletion, a recreated topic).

    Raised when ``failOnDataLoss`` is true (the default); with false the source logs a
    warning and goes on from the first offset still there.
    """


def make_consumer(options: ReadOptions, role: str) -> Any:
    """A kafkalite Consumer that reads raw bytes and never resets on its own.

    It carries the query's group id (``<groupIdPrefix>-<uuid>-driver`` or ``-executor``, as
    Spark names its consumers, or ``kafka.group.id``) for the broker's logs and ACLs, but
    uses ``assign()`` only: it never joins the group and never commits.
    """
    from kafkalite.consumer import Consumer

    group_id = options.group_id if options.group_id_given else f"{options.group_id}-{role}"
    return Consumer(**{**_TUNABLE_DEFAULTS, **options.client_config,
                       **_SOURCE_CLIENT_SETTINGS, "group_id": group_id})


def report_data_loss(fail: bool, message: str) -> None:
    if fail:
        raise DataLossError(f"{message}. Set failOnDataLoss=false to skip lost data with a "
                            "warning instead")
    log.warning("%s; skipping it (failOnDataLoss=false)", message)


def with_retries(call: Callable[[], T], what: str, retries: int, interval_ms: int,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """``call()``, tried again up to ``retries`` times on a Kafka error (fetchOffset.numRetries,
    fetchOffset.retryIntervalMs); the last error is raised, naming what was being looked up.

    No broker reachable at all (a wrong port, CA or ``security_protocol``) is not retried:
    the same settings fail the same way, so the query fails at once, naming the cause.
    """
    for attempt in range(retries + 1):
        try:
            return call()
        except (DataLossError, ConfigError):
            raise
        except BrokerUnreachableError as exc:
            raise BrokerUnreachableError(f"fetching {what}: {exc}") from exc
        except KafkaError as exc:
            if attempt == retries:
                raise KafkaError(f"fetching {what} failed {retries + 1} times "
                                 f"(fetchOffset.numRetries={retries}): {exc}") from exc
            log.warning("fetching %s failed (%s); retrying in %d ms", what, exc, interval_ms)
            sleep(interval_ms / 1000)
    raise AssertionError("unreachable")


class OffsetResolver:
    """Driver-side lookups; holds one consumer, so close it (or use ``with``).

    Every lookup is retried per fetchOffset.numRetries / fetchOffset.retryIntervalMs.
    """

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._consumer = make_consumer(options, "driver")

    def __enter__(self) -> OffsetResolver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._consumer.close()

    def _retrying(self, call: Callable[[], T], what: str) -> T:
        return with_retries(call, what, self.options.fetch_offset_retries,
                            self.options.fetch_offset_retry_interval_ms)

    def partitions(self) -> list[TopicPartition]:
        """The selected partitions as of now (a pattern or a new partition may add some)."""
        selection: TopicSelection = self.options.selection
        if selection.partitions:
            return list(selection.partitions)
        if selection.pattern is not None:
            pattern = re.compile(selection.pattern)
            topics: Iterable[str] = sorted(
                t for t in self._retrying(self._consumer.topics, "topics")
                if pattern.fullmatch(t) and not t.startswith("__"))
        else:
            topics = selection.topics
        return sorted(TopicPartition(topic, p) for topic in topics for p in self._retrying(
            partial(self._partitions_of, topic), "partitions"))

    def _partitions_of(self, topic: str) -> Iterable[int]:
        """A topic's partitions; none when it does not exist. The consumer answers None for
        a broker it could not reach or log in to as well, so then the cluster's topic list,
        which raises the reason (failed authentication, a timeout), decides: a read with a
        wrong password fails instead of finding nothing."""
        found = self._consumer.partitions_for_topic(topic)
        if found is not None:
            return found
        return () if topic not in self._consumer.topics() else \
            self._consumer.partitions_for_topic(topic) or ()

    def earliest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        if not partitions:
            return {}
        return dict(self._retrying(lambda: self._consumer.beginning_offsets(partitions),
                                   "earliest offsets"))

    def latest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        if not partitions:
            return {}
        return dict(self._retrying(lambda: self._consumer.end_offsets(partitions),
                                   "latest offsets"))

    def starting_offsets(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """Where a read starts: startingTimestamp, else startingOffsetsByTimestamp, else
        startingOffsets (Spark's precedence)."""
        options = self.options
        timestamps = self._timestamps(options.starting_timestamp, options.starting_by_timestamp,
                                      partitions, "startingOffsetsByTimestamp")
        if timestamps is None:
            return self.resolve(options.starting, partitions, "startingOffsets")
        return self._offsets_at(timestamps, "startingTimestamp", options.timestamp_strategy)

    def ending_offsets(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """Where a batch read ends: endingTimestamp, endingOffsetsByTimestamp, endingOffsets.
        A timestamp after a partition's last record ends it at its latest offset."""
        options = self.options
        timestamps = self._timestamps(options.ending_timestamp, options.ending_by_timestamp,
                                      partitions, "endingOffsetsByTimestamp")
        if timestamps is None:
            return self.resolve(options.ending, partitions, "endingOffsets")
        return self._offsets_at(timestamps, "endingTimestamp", "latest")

    @staticmethod
    def _timestamps(timestamp: int | None, per_partition: PartitionOffsets | None,
                    partitions: list[TopicPartition], option: str) -> PartitionOffsets | None:
        if timestamp is not None:
            return {tp: timestamp for tp in partitions}
        if per_partition is None:
            return None
        _require_every_partition(per_partition, partitions, option)
        return {tp: per_partition[tp] for tp in partitions}

    def _offsets_at(self, timestamps: PartitionOffsets, option: str,
                    strategy: TimestampStrategy) -> PartitionOffsets:
        """The first offset at or after each partition's timestamp. Where there is none,
        ``error`` fails the read (Spark's default for starting offsets) and ``latest`` takes
        the partition's latest offset."""
        partitions = list(timestamps)
        found = self._retrying(lambda: self._consumer.offsets_for_times(timestamps),
                               "offsets for timestamps")
        missing = sorted(tp for tp in partitions if found.get(tp) is None)
        if missing and strategy == "error":
            tp = missing[0]
            raise KafkaError(f"{option}: {tp.topic}-{tp.partition} has no record at or after "
                             f"timestamp {timestamps[tp]}. Set "
                             "startingOffsetsByTimestampStrategy=latest to start such "
                             "partitions at their latest offset")
        latest = self.latest(missing)
        return {tp: latest[tp] if tp in latest else found[tp].offset for tp in partitions}

    def resolve(self, spec: OffsetSpec, partitions: list[TopicPartition],
                option: str) -> PartitionOffsets:
        """Concrete offsets for ``spec``: earliest, latest, or JSON offsets, which must name
        every selected partition, as in Spark, so a forgotten partition is an error, not a
        silent default."""
        if spec == "earliest":
            return self.earliest(partitions)
        if spec == "latest":
            return self.latest(partitions)
        assert isinstance(spec, dict)
        _require_every_partition(spec, partitions, option)
        offsets = {tp: spec[tp] for tp in partitions}
        earliest = self.earliest([tp for tp, o in offsets.items() if o == EARLIEST])
        latest = self.latest([tp for tp, o in offsets.items() if o == LATEST])
        return {**offsets, **earliest, **latest}


def _require_every_partition(given: PartitionOffsets, partitions: list[TopicPartition],
                             option: str) -> None:
    missing = sorted(set(partitions) - set(given))
    if missing:
        raise KafkaError(f"{option}: JSON leaves out selected partitions "
                         f"{[f'{tp.topic}-{tp.partition}' for tp in missing]}")


def read_range(options: ReadOptions, offset_range: OffsetRange,
               arrow_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``[start, end)`` of one partition as Arrow batches.

    Offsets that are no longer there (retention, compaction, transaction markers) are
    skipped; a range whose beginning was deleted is data loss, handled per failOnDataLoss.
    A partition that makes no progress for ``kafkaConsumer.pollTimeoutMs`` fails the task.
    """
    tp, end = offset_range.topic_partition, offset_range.end
    builder = ArrowBatchBuilder(arrow_schema, options.value)
    with make_consumer(options, "executor") as consumer:
        consumer.assign([tp])
        position = _first_readable(consumer, options, offset_range, offset_range.start)
        if position >= end:
            return
        consumer.seek(tp, position)
        progress_deadline = time.monotonic() + options.poll_timeout_ms / 1000
        while position < end:
            try:
                fetched = consumer.poll_arrow(timeout_ms=500,
                                             timestamp_type=builder.needs_timestamp_type)
            except OffsetOutOfRangeError:
                position = _first_readable(consumer, options, offset_range, position)
                consumer.seek(tp, position)
                continue
            if fetched.num_rows:
                yield builder.build(_before(fetched, end))
            new_position = consumer.position(tp)
            if new_position > position:
                position = new_position
                progress_deadline = time.monotonic() + options.poll_timeout_ms / 1000
            elif time.monotonic() > progress_deadline:
                raise KafkaTimeoutError(
                    f"{tp.topic}-{tp.partition}: no progress past offset {position} (reading up "
                    f"to {end}) within kafkaConsumer.pollTimeoutMs={options.poll_timeout_ms}")


def _before(batch: pa.RecordBatch, end: int) -> pa.RecordBatch:
    """The rows of ``batch`` (one partition's, offsets ascending) with offsets below ``end``."""
    offsets = batch.column("offset")
    if offsets[-1].as_py() < end:
        return batch
    return batch.slice(0, pc.sum(pc.less(offsets, end)).as_py() or 0)


def _first_readable(consumer: Any, options: ReadOptions, offset_range: OffsetRange,
                    wanted: int) -> int:
    """``wanted``, or the partition's first offset when the ones before it were deleted."""
    tp = offset_range.topic_partition
    earliest = consumer.beginning_offsets([tp])[tp]
    if earliest <= wanted:
        return wanted
    lost_until = min(earliest, offset_range.end)
    report_data_loss(options.fail_on_data_loss,
                     f"{tp.topic}-{tp.partition}: offsets {wanted}..{lost_until - 1} were "
                     f"deleted before they could be read (the partition now starts at "
                     f"{earliest})")
    return earliest
