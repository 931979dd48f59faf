"""Streaming reads and writes: checkpointed offsets, restarts, maxOffsetsPerTrigger, AvailableNow."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

Produce = Callable[[str, list[dict[str, Any]]], None]


def stream(spark: SparkSession, bootstrap: str, topic: str, schema: str | None = None,
           **options: str) -> DataFrame:
    reader = spark.readStream.format("kafkalite") \
        .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic) \
        .option("startingOffsets", "earliest")
    if schema is not None:
        reader = reader.schema(schema)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def records(start: int, count: int, partitions: int) -> list[dict[str, Any]]:
    return [{"value": f"v{i}".encode(), "partition": i % partitions}
            for i in range(start, start + count)]


def run_available_now(df: DataFrame, checkpoint: Path, sink: Callable[[DataFrame, int], None]
                      ) -> None:
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)) \
        .trigger(availableNow=True).start()
    assert query.awaitTermination(120), "an AvailableNow query must stop by itself"
    assert query.exception() is None


def test_restart_resumes_from_checkpoint_without_loss_or_duplicates(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        produce: Produce, tmp_path: Path) -> None:
    topic = new_topic(3)
    produce(topic, records(0, 90, 3))
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def query() -> None:
        df = stream(spark, bootstrap, topic).select("partition", "offset", "value")
        q = df.writeStream.format("parquet").option("path", str(output)) \
            .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
        assert q.awaitTermination(120)
        assert q.exception() is None

    query()
    assert spark.read.parquet(str(output)).count() == 90
    produce(topic, records(90, 60, 3))
    query()
    written = spark.read.parquet(str(output))
    assert written.count() == 150
    assert written.select("partition", "offset").distinct().count() == 150
    assert {r.value for r in written.select("value").collect()} == \
        {f"v{i}".encode() for i in range(150)}


def test_max_offsets_per_trigger_caps_each_micro_batch(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        produce: Produce, tmp_path: Path) -> None:
    topic = new_topic(2)
    produce(topic, records(0, 100, 2))
    sizes: list[int] = []
    run_available_now(stream(spark, bootstrap, topic, maxOffsetsPerTrigger="30"),
                      tmp_path / "checkpoint", lambda batch, _id: sizes.append(batch.count()))
    assert sum(sizes) == 100
    assert max(sizes) <= 30
    assert len([s for s in sizes if s]) >= 4


def test_a_declared_schema_streams_exactly_its_columns(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        produce: Produce, tmp_path: Path) -> None:
    topic = new_topic(2)
    produce(topic, records(0, 40, 2))
    seen: list[tuple[list[str], list[tuple[bytes, int]]]] = []
    run_available_now(stream(spark, bootstrap, topic, "value binary, partition int",
                             maxOffsetsPerTrigger="25"), tmp_path / "checkpoint",
                      lambda batch, _id: seen.append(
                          (batch.columns, [(r.value, r.partition) for r in batch.collect()])))
    assert {tuple(columns) for columns, _ in seen} == {("value", "partition")}
    assert sorted(row for _, rows in seen for row in rows) == \
        sorted((f"v{i}".encode(), i % 2) for i in range(40))


def test_available_now_stops_at_the_offsets_present_at_start(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        produce: Produce, tmp_path: Path) -> None:
    topic = new_topic(1)
    produce(topic, records(0, 20, 1))
    seen: list[int] = []

    def sink(batch: DataFrame, _batch_id: int) -> None:
        seen.extend(r.offset for r in batch.select("offset").collect())
        if len(seen) == 20 and not any(o >= 20 for o in seen):
            produce(topic, records(20, 5, 1))  # arrives after the run's target: not read

    run_available_now(stream(spark, bootstrap, topic, maxOffsetsPerTrigger="10"),
                      tmp_path / "checkpoint", sink)
    assert sorted(seen) == list(range(20))


def test_streaming_write_copies_a_topic(spark: SparkSession, bootstrap: str,
                                        new_topic: Callable[[int], str], produce: Produce,
                                        tmp_path: Path) -> None:
    source, target = new_topic(2), new_topic(2)
    produce(source, records(0, 40, 2))
    df = stream(spark, bootstrap, source).selectExpr("key", "value", "partition")
    query = df.writeStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("topic", target).option("checkpointLocation", str(tmp_path / "checkpoint")) \
        .trigger(availableNow=True).start()
    assert query.awaitTermination(120)
    assert query.exception() is None
    copied = spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("subscribe", target).load()
    assert sorted((r.partition, r.value) for r in copied.collect()) == \
        sorted((i % 2, f"v{i}".encode()) for i in range(40))


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_min_offsets_per_trigger_holds_batches_back_until_max_trigger_delay(
        bootstrap: str, new_topic: Callable[[int], str], produce: Produce) -> None:
    # The driver-side reader on its own, with a fake clock: which end offset each trigger
    # gets (an end equal to the start means the engine runs no batch).
    from pyspark.sql.types import StructType, _parse_datatype_string

    from kafkalite.spark.options import parse_read_options
    from kafkalite.spark.readers import StreamReader
    from kafkalite.spark.schema import source_schema_ddl

    topic = new_topic(2)
    produce(topic, records(0, 10, 2))
    options = parse_read_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                  "startingOffsets": "earliest", "minOffsetsPerTrigger": "30",
                                  "maxTriggerDelay": "1m"}, streaming=True)
    clock = FakeClock()
    schema = _parse_datatype_string(source_schema_ddl(options.value, False))
    assert isinstance(schema, StructType)
    reader = StreamReader(options, schema, clock)
    try:
        start = reader.initialOffset()
        assert start == {topic: {"0": 0, "1": 0}}
        first = reader.latestOffset(start, None)  # the first batch is never held back
        assert first == {topic: {"0": 5, "1": 5}}
        produce(topic, records(10, 10, 2))
        clock.now += 30
        assert reader.latestOffset(first, None) == first  # 10 < 30 waiting, 30 s < 1 min
        produce(topic, records(20, 20, 2))
        assert reader.latestOffset(first, None) == {topic: {"0": 20, "1": 20}}  # 30 waiting
        produce(topic, records(40, 2, 2))
        clock.now += 59
        assert reader.latestOffset({topic: {"0": 20, "1": 20}}, None) == \
            {topic: {"0": 20, "1": 20}}
        clock.now += 1  # maxTriggerDelay since the last batch: fire with what there is
        assert reader.latestOffset({topic: {"0": 20, "1": 20}}, None) == \
            {topic: {"0": 21, "1": 21}}
    finally:
        reader.stop()
