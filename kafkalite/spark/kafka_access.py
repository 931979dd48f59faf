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
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol.errors import OffsetOutOfRangeError
from kafkalite.spark.offsets import EARLIEST, LATEST, OffsetSpec, PartitionOffsets
from kafkalite.spark.options import ReadOptions, TopicSelection
from kafkalite.spark.planning import OffsetRange
from kafkalite.spark.schema import ArrowBatchBuilder
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)

ARROW_BATCH_RECORDS = 20_000
"""Records per Arrow batch handed to Spark: large enough to amortise the per-batch cost."""

_SOURCE_CLIENT_SETTINGS: Mapping[str, Any] = {
    "group_id": None,
    "enable_auto_commit": False,
    "auto_offset_reset": "none",
}
_TUNABLE_DEFAULTS: Mapping[str, Any] = {"max_poll_records": ARROW_BATCH_RECORDS}


class DataLossError(KafkaError):
    """Offsets the query needs are gone (retention, deletion, a recreated topic).

    Raised when ``failOnDataLoss`` is true (the default); with false the source logs a
    warning and goes on from the first offset still there.
    """


def make_consumer(client_config: Mapping[str, Any]) -> Any:
    """A group-less kafkalite Consumer that reads raw bytes and never resets on its own."""
    from kafkalite.consumer import Consumer

    return Consumer(**{**_TUNABLE_DEFAULTS, **client_config, **_SOURCE_CLIENT_SETTINGS})


def report_data_loss(fail: bool, message: str) -> None:
    if fail:
        raise DataLossError(f"{message}. Set failOnDataLoss=false to skip lost data with a "
                            "warning instead")
    log.warning("%s; skipping it (failOnDataLoss=false)", message)


class OffsetResolver:
    """Driver-side lookups; holds one consumer, so close it (or use ``with``)."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._consumer = make_consumer(options.client_config)

    def __enter__(self) -> OffsetResolver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._consumer.close()

    def partitions(self) -> list[TopicPartition]:
        """The selected partitions as of now (a pattern or a new partition may add some)."""
        selection: TopicSelection = self.options.selection
        if selection.partitions:
            return list(selection.partitions)
        if selection.pattern is not None:
            pattern = re.compile(selection.pattern)
            topics: Iterable[str] = sorted(t for t in self._consumer.topics()
                                           if pattern.fullmatch(t) and not t.startswith("__"))
        else:
            topics = selection.topics
        return sorted(TopicPartition(topic, p) for topic in topics
                      for p in self._consumer.partitions_for_topic(topic) or ())

    def earliest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        return dict(self._consumer.beginning_offsets(partitions)) if partitions else {}

    def latest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        return dict(self._consumer.end_offsets(partitions)) if partitions else {}

    def resolve(self, spec: OffsetSpec, partitions: list[TopicPartition], option: str,
                timestamp: int | None = None) -> PartitionOffsets:
        """Concrete offsets for ``spec`` (or for ``timestamp``, which takes precedence).

        A timestamp maps to the first offset at or after it; a partition with no such record
        gets its end offset (nothing to read yet). JSON offsets must name every selected
        partition, as in Spark, so a forgotten partition is an error, not a silent default.
        """
        if timestamp is not None:
            found = self._consumer.offsets_for_times({tp: timestamp for tp in partitions})
            ends = self.latest(partitions)
            return {tp: found[tp].offset if found.get(tp) is not None else ends[tp]
                    for tp in partitions}
        if spec == "earliest":
            return self.earliest(partitions)
        if spec == "latest":
            return self.latest(partitions)
        assert isinstance(spec, dict)
        missing = sorted(set(partitions) - set(spec))
        if missing:
            raise KafkaError(f"{option}: JSON offsets leave out selected partitions "
                             f"{[f'{tp.topic}-{tp.partition}' for tp in missing]}")
        offsets = {tp: spec[tp] for tp in partitions}
        earliest = self.earliest([tp for tp, o in offsets.items() if o == EARLIEST])
        latest = self.latest([tp for tp, o in offsets.items() if o == LATEST])
        return {**offsets, **earliest, **latest}


def read_range(options: ReadOptions, offset_range: OffsetRange,
               arrow_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``[start, end)`` of one partition as Arrow batches.

    Offsets that are no longer there (retention, compaction, transaction markers) are
    skipped; a range whose beginning was deleted is data loss, handled per failOnDataLoss.
    A partition that makes no progress for ``kafkaConsumer.pollTimeoutMs`` fails the task.
    """
    tp, end = offset_range.topic_partition, offset_range.end
    builder = ArrowBatchBuilder(arrow_schema, options.value)
    with make_consumer(options.client_config) as consumer:
        consumer.assign([tp])
        position = _first_readable(consumer, options, offset_range, offset_range.start)
        if position >= end:
            return
        consumer.seek(tp, position)
        progress_deadline = time.monotonic() + options.poll_timeout_ms / 1000
        pending: list[Any] = []
        while position < end:
            try:
                fetched = consumer.poll(timeout_ms=500).get(tp, ())
            except OffsetOutOfRangeError:
                position = _first_readable(consumer, options, offset_range, position)
                consumer.seek(tp, position)
                continue
            if fetched:
                if fetched[-1].offset >= end:
                    fetched = [r for r in fetched if r.offset < end]
                pending.extend(fetched)
                if len(pending) >= ARROW_BATCH_RECORDS:
                    yield builder.build(pending)
                    pending = []
            new_position = consumer.position(tp)
            if new_position > position:
                position = new_position
                progress_deadline = time.monotonic() + options.poll_timeout_ms / 1000
            elif time.monotonic() > progress_deadline:
                raise KafkaTimeoutError(
                    f"{tp.topic}-{tp.partition}: no progress past offset {position} (reading up "
                    f"to {end}) within kafkaConsumer.pollTimeoutMs={options.poll_timeout_ms}")
        if pending:
            yield builder.build(pending)


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
