"""Batch and streaming writers: each Spark task produces its rows with a kafkalite Producer.

Columns as in Spark's Kafka sink: ``value`` (required; binary or string, or a struct that is
encoded with msgpack), and optional ``key`` (binary or string), ``topic`` (string, when the
``topic`` option is not set), ``partition`` (int) and ``headers``
(``array<struct<key: string, value: binary>>``). A task returns only after every record is
acknowledged, so a committed Spark job means every row is in Kafka (at least once: a retried
task may produce its rows again, exactly as with Spark's own Kafka sink).

With ``transactionalIdPrefix`` each task writes its rows in one Kafka transaction, under the
transactional id ``<prefix>-<Spark partition id>``: it commits when every row is acknowledged
and aborts when the task fails, so ``read_committed`` readers see a task's rows all at once
or not at all. Every attempt of a task has the same id, so a retry's ``init_transactions()``
fences the attempt before it and aborts whatever that attempt left open (a killed executor
cannot abort). A task that committed and is then run again (a lost executor whose result
never reached the driver, speculation, a replayed micro-batch) commits its rows again: the
guarantee is per task attempt, not exactly once per job (docs/spark.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from kafkalite.errors import ConfigError, KafkaError
from kafkalite.serde import pack_msgpack
from kafkalite.spark.options import WriteOptions
from kafkalite.spark.schema import HEADERS_TYPE

try:  # pyspark >= 4.1 hands streaming writers Arrow batches too
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - pyspark 4.0: streaming writers get Rows
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as _StreamWriterBase,
    )

log = logging.getLogger(__name__)

_BYTES_OR_TEXT = (BinaryType, StringType)


@dataclass
class ProducedRecords(WriterCommitMessage):
    """What one task wrote: the number of records the broker acknowledged, and the
    transactional id it committed them under (None without transactionalIdPrefix)."""

    records: int
    transactional_id: str | None = None


def check_save_mode(overwrite: bool) -> None:
    """The sink appends, as Spark's Kafka sink: Overwrite is refused (Kafka cannot replace a
    topic's records); ErrorIfExists, the default, is taken as Append (see
    :func:`kafkalite.spark.datasource.register`)."""
    if overwrite:
        raise ConfigError("mode", "Overwrite is not allowed for a kafkalite write; the sink "
                          "appends records (use mode 'append', the default)")


def check_write_schema(schema: StructType, options: WriteOptions) -> None:
    """Refuse, on the driver, a DataFrame the sink cannot write; the error names the column."""
    columns = {f.name: f.dataType for f in schema.fields}
    if "value" not in columns:
        raise ConfigError("value", "a kafkalite write needs a 'value' column")
    _require("value", columns["value"], (*_BYTES_OR_TEXT, StructType))
    if options.topic is None and "topic" not in columns:
        raise ConfigError("topic", "set the 'topic' option or add a 'topic' column")
    expected: dict[str, tuple[type[DataType], ...]] = {
        "key": _BYTES_OR_TEXT, "topic": (StringType,), "partition": (IntegerType,)}
    for name, types in expected.items():
        if name in columns:
            _require(name, columns[name], types)
    # simpleString leaves nullability out: F.array(F.struct(...)) builds non-null fields.
    if "headers" in columns and columns["headers"].simpleString() != HEADERS_TYPE.simpleString():
        raise ConfigError("headers", f"column must be {HEADERS_TYPE.simpleString()}, "
                          f"not {columns['headers'].simpleString()}")


def _require(name: str, actual: DataType, types: tuple[type[DataType], ...]) -> None:
    if not isinstance(actual, types):
        allowed = " or ".join(t.typeName() for t in types)
        raise ConfigError(name, f"column must be {allowed}, not {actual.simpleString()}")


def produce_batches(options: WriteOptions, batches: Iterator[pa.RecordBatch],
                    transactional_id: str | None = None) -> int:
    """Send every row, flush, and raise the first delivery error; returns the record count.

    With ``transactional_id`` the rows go in one transaction, committed only when all of them
    were acknowledged and aborted on any error (then the error is raised).
    """
    from kafkalite.producer import Producer

    if transactional_id is None:
        with Producer(**options.client_config) as producer:
            return _send_all(producer, options, batches)
    with Producer(**options.client_config, transactional_id=transactional_id) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        try:
            sent = _send_all(producer, options, batches)
            producer.commit_transaction()
        except BaseException:
            _abort(producer, transactional_id)
            raise
        return sent


def _send_all(producer: Any, options: WriteOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Rows go with ``Producer.send_batch``, one call per topic and ``partition`` value met
    in an Arrow batch (one call for the whole batch when neither column is present)."""
    failures: list[tuple[int, BaseException]] = []
    sent = 0
    for batch in batches:
        for topic, partition, rows in _runs(options, batch, sent):
            futures = producer.send_batch(
                topic, _values(rows.column("value")),
                keys=rows.column("key") if "key" in rows.schema.names else None,
                partition=partition,
                headers=rows.column("headers") if "headers" in rows.schema.names else None)
            for future in futures:
                future.add_errback(lambda exc, n=future.record_count:
                                   failures.append((n, exc)))
        sent += batch.num_rows
    producer.flush()
    if failures:
        lost = sum(count for count, _ in failures)
        raise KafkaError(f"{lost} of {sent} records were not delivered; "
                         f"first error: {failures[0][1]!r}")
    return sent


def _abort(producer: Any, transactional_id: str) -> None:
    """Abort the task's transaction; if that fails too (a newer attempt fenced this one, the
    broker is gone), the next ``init_transactions()`` with the id or the coordinator's
    transaction timeout aborts it, so the task's own error is the one to raise."""
    try:
        producer.abort_transaction()
    except KafkaError as exc:
        log.warning("could not abort the transaction of %s (%s); the next attempt with this "
                    "transactional id, or the transaction timeout, aborts it",
                    transactional_id, exc)


def _runs(options: WriteOptions, batch: pa.RecordBatch,
          first_row: int) -> Iterator[tuple[str, int | None, pa.RecordBatch]]:
    """``(topic, partition, rows)`` groups of ``batch``, in first-seen order."""
    names = batch.schema.names
    if options.topic and "partition" not in names:
        yield options.topic, None, batch
        return
    topics = [options.topic] * batch.num_rows if options.topic else \
        batch.column("topic").to_pylist()
    partitions = batch.column("partition").to_pylist() if "partition" in names else \
        [None] * batch.num_rows
    groups: dict[tuple[str, int | None], list[int]] = {}
    for index, key in enumerate(zip(topics, partitions, strict=True)):
        if not key[0]:
            raise KafkaError(f"row {first_row + index}: null topic and no 'topic' option")
        groups.setdefault(key, []).append(index)
    for (topic, partition), indices in groups.items():
        yield topic, partition, batch.take(pa.array(indices, pa.int64()))


def _values(column: pa.Array) -> Any:
    """Binary and string columns go as they are; structs become msgpack bytes."""
    if pa.types.is_struct(column.type):
        return [_as_bytes(value) for value in column.to_pylist()]
    return column


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return pack_msgpack(value)


def _as_arrow(rows: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    """Rows (pyspark 4.0 streaming writers) into one Arrow batch, to share one send loop."""
    dicts = [row.asDict(recursive=True) for row in rows]
    if dicts:
        yield pa.RecordBatch.from_pylist(dicts)


def write_task(options: WriteOptions, batches: Iterator[pa.RecordBatch]) -> ProducedRecords:
    """One Spark task's write: transactional under ``<prefix>-<partition id>`` when
    transactionalIdPrefix is set."""
    transactional_id = None
    if options.transactional_id_prefix is not None:
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is None:
            raise KafkaError("transactionalIdPrefix: no Spark task context to take the "
                             "partition id from")
        transactional_id = options.transactional_id(context.partitionId())
    return ProducedRecords(produce_batches(options, batches, transactional_id),
                           transactional_id)


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ProducedRecords:
        return write_task(self.options, iterator)


class StreamWriter(_StreamWriterBase):
    """Each micro-batch's tasks produce their rows (each in its own transaction with
    transactionalIdPrefix); nothing to do at commit (at least once across replays)."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> ProducedRecords:
        first = next(iterator, None)
        if first is None:
            return ProducedRecords(0)
        batches = _chain(first, iterator)
        if not isinstance(first, pa.RecordBatch):
            batches = _as_arrow(batches)
        return write_task(self.options, batches)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records are acknowledged (and committed) before a task ends; nothing to add."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Tasks that finished committed on their own; Kafka cannot take that back."""


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest
