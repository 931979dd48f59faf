"""Batch and streaming readers of the ``kafkalite`` source.

Planning (which offsets) happens on the driver with an :class:`OffsetResolver`; each Spark
task reads one :class:`OffsetRange` with :func:`read_range`. Streaming offsets are the JSON
maps Spark stores in the query's checkpoint, so a restarted query resumes exactly where the
last committed micro-batch ended: no record lost, none read twice.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from kafkalite.errors import KafkaError
from kafkalite.spark.kafka_access import OffsetResolver, read_range, report_data_loss
from kafkalite.spark.offsets import PartitionOffsets, offsets_from_json, offsets_to_json
from kafkalite.spark.options import ReadOptions
from kafkalite.spark.planning import (
    OffsetRange,
    backlog,
    cap_offsets,
    ranges_between,
    split_ranges,
)

try:  # pyspark >= 4.2: the engine passes read limits and supports Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - pyspark 4.0 / 4.1
    ReadAllAvailable = ReadMaxRows = None  # type: ignore[assignment,misc]
    SupportsTriggerAvailableNow = object  # type: ignore[assignment,misc]


class RangePartition(InputPartition):
    """One Spark task's share of the read: a single offset range."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.range = offset_range


def _plan(ranges: list[OffsetRange], options: ReadOptions) -> list[RangePartition]:
    return [RangePartition(r) for r in split_ranges(ranges, options.min_partitions,
                                                    options.max_records_per_partition)]


_worker_heap_frozen = False


def freeze_worker_heap() -> None:
    """Once per reused Python worker, after its first read: collect, then ``gc.freeze()``.

    PySpark's daemon runs a full ``gc.collect()`` in a reused worker after every task, and
    that walks every object the worker holds: about 100,000 once pyspark, pyarrow and
    kafkalite are imported, 30-60 ms of CPU per task, more than reading 50,000 records takes.
    Frozen objects (the modules, classes and caches the first read imported or built) are
    left out of every later collection, which then costs about 0.1 ms; objects created
    later are collected as before. The collect first leaves only live objects to freeze;
    the price is that a cycle among the frozen ones that turns to garbage later is never
    reclaimed (reference counting still frees the rest).
    Nothing happens outside a reused worker (``SPARK_REUSE_WORKER`` unset): a worker that
    exits after its task, the driver, a test calling ``read()`` directly.
    """
    global _worker_heap_frozen
    if _worker_heap_frozen or not os.environ.get("SPARK_REUSE_WORKER"):
        return
    _worker_heap_frozen = True
    gc.collect()
    gc.freeze()


def _read(options: ReadOptions, schema: StructType,
          partition: InputPartition) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, RangePartition):
        return  # Spark reads one stand-in partition when the plan is empty: nothing to read
    yield from read_range(options, partition.range, to_arrow_schema(schema, timezone="UTC"))
    freeze_worker_heap()


class BatchReader(DataSourceReader):
    """``spark.read``: the offsets between startingOffsets and endingOffsets, fixed at planning."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        with OffsetResolver(options) as resolver:
            partitions = resolver.partitions()
            start = resolver.starting_offsets(partitions)
            end = resolver.ending_offsets(partitions)
        backwards = sorted(tp for tp in partitions if end[tp] < start[tp])
        if backwards:
            tp = backwards[0]
            raise KafkaError(f"{tp.topic}-{tp.partition}: starting offset {start[tp]} is after "
                             f"ending offset {end[tp]}")
        return _plan(ranges_between(start, end), options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, self.schema, partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: micro-batches between offsets kept in Spark's checkpoint.

    ``maxOffsetsPerTrigger`` reaches the engine as its default read limit (pyspark >= 4.2),
    so triggers that ignore limits (the engine may pass ReadAllAvailable) do; on older
    pyspark, ``latestOffset()`` gets no start and caps from the previous batch's end.

    ``minOffsetsPerTrigger`` holds a micro-batch back (``latestOffset()`` answers the start
    offsets, so the engine plans nothing) until that many offsets are waiting or
    ``maxTriggerDelay`` has passed since the last batch; an AvailableNow run never waits.
    """

    def __init__(self, options: ReadOptions, schema: StructType,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options
        self.schema = schema
        self._clock = clock
        self._resolver: OffsetResolver | None = None
        self._available_now_target: PartitionOffsets | None = None
        self._last_end: PartitionOffsets | None = None
        self._last_trigger: float | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Tasks get the options and schema, never the driver's live consumer."""
        return {**self.__dict__, "_resolver": None}

    @property
    def resolver(self) -> OffsetResolver:
        if self._resolver is None:
            self._resolver = OffsetResolver(self.options)
        return self._resolver

    def initialOffset(self) -> dict[str, Any]:
        resolver = self.resolver
        return offsets_to_json(resolver.starting_offsets(resolver.partitions()))

    def getDefaultReadLimit(self) -> Any:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an AvailableNow run: the latest offsets as of now."""
        self._available_now_target = self.resolver.latest(self.resolver.partitions())

    def latestOffset(self, start: dict[str, Any] | None = None,
                     limit: Any = None) -> dict[str, Any]:
        if start is not None:
            start_offsets = offsets_from_json(start)
        elif self._last_end is not None:
            start_offsets = self._last_end
        else:
            start_offsets = {}
        latest = self._available_now_target
        if latest is None:
            latest = self.resolver.latest(self.resolver.partitions())
        start_offsets = self._checked_for_loss(start_offsets, latest)
        if self._held_back(start_offsets, latest):
            return offsets_to_json(start_offsets)
        if limit is None:  # pyspark < 4.2: no read limit from the engine
            max_records = self.options.max_offsets_per_trigger if start_offsets else None
        else:  # ReadMaxRows carries a limit; ReadAllAvailable (and others) do not
            max_records = getattr(limit, "max_rows", None)
        end = cap_offsets(start_offsets, latest, max_records)
        self._last_end = end
        return offsets_to_json(end)

    def _held_back(self, start: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """True while fewer than minOffsetsPerTrigger offsets wait and the last batch is less
        than maxTriggerDelay ago (the first batch is never held back, as in Spark)."""
        minimum = self.options.min_offsets_per_trigger
        if minimum is None or self._available_now_target is not None or not start:
            return False
        now = self._clock()
        waited_ms = None if self._last_trigger is None else (now - self._last_trigger) * 1000
        if backlog(start, latest) < minimum and waited_ms is not None and \
                waited_ms < self.options.max_trigger_delay_ms:
            return True
        self._last_trigger = now
        return False

    def _checked_for_loss(self, start: PartitionOffsets,
                          latest: PartitionOffsets) -> PartitionOffsets:
        """``start`` after reporting partitions that vanished or whose offsets went backwards.

        A partition that went backwards (a recreated topic) continues from its new latest
        offset when failOnDataLoss=false.
        """
        fail = self.options.fail_on_data_loss
        for tp in sorted(set(start) - set(latest)):
            report_data_loss(fail, f"{tp.topic}-{tp.partition} is no longer there (topic "
                             f"deleted?) after offset {start[tp]}")
        checked = dict(start)
        for tp, offset in latest.items():
            if tp in start and offset < start[tp]:
                report_data_loss(fail, f"{tp.topic}-{tp.partition}: the latest offset went "
                                 f"back from {start[tp]} to {offset} (topic recreated?)")
                checked[tp] = offset
        return checked

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return _plan(ranges_between(offsets_from_json(start), offsets_from_json(end)),
                     self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, self.schema, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in a consumer group."""

    def stop(self) -> None:
        if self._resolver is not None:
            self._resolver.close()
            self._resolver = None
