"""Batch reads and writes of the ``kafkalite`` source against an embedded broker."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import msgpack
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StructType

EXPECTED_SCHEMA = StructType.fromJson({"type": "struct", "fields": [
    {"name": name, "type": kind, "nullable": True, "metadata": {}} for name, kind in [
        ("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "integer"),
        ("offset", "long"), ("timestamp", "timestamp"), ("timestampType", "integer")]]})

Produce = Callable[[str, list[dict[str, Any]]], None]


def read(spark: SparkSession, bootstrap: str, schema: str | None = None,
         **options: str) -> DataFrame:
    reader = spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
    if schema is not None:
        reader = reader.schema(schema)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.fixture
def filled_topic(new_topic: Callable[[int], str], produce: Produce) -> str:
    """A 3-partition topic with 40 records per partition: key k<i>, value v<i>."""
    topic = new_topic(3)
    produce(topic, [{"value": f"v{i}".encode(), "key": f"k{i}".encode(), "partition": i % 3,
                     "timestamp_ms": 1_700_000_000_000 + i} for i in range(120)])
    return topic


def test_reads_every_record_once_with_sparks_kafka_schema(
        spark: SparkSession, bootstrap: str, filled_topic: str) -> None:
    df = read(spark, bootstrap, subscribe=filled_topic)
    assert df.schema == EXPECTED_SCHEMA
    rows = df.collect()
    assert len(rows) == 120
    assert {(r.partition, r.offset) for r in rows} == {(p, o) for p in range(3) for o in range(40)}
    by_key = {r.key: r for r in rows}
    assert set(by_key) == {f"k{i}".encode() for i in range(120)}
    row = by_key[b"k7"]
    assert (row.value, row.topic, row.partition, row.offset, row.timestampType) == \
        (b"v7", filled_topic, 1, 2, 0)
    assert int(row.timestamp.timestamp() * 1000) == 1_700_000_000_007


def test_a_declared_schema_reads_exactly_its_columns_in_its_order(
        spark: SparkSession, bootstrap: str, filled_topic: str) -> None:
    df = read(spark, bootstrap, "offset long, value binary, timestamp timestamp",
              subscribe=filled_topic)
    assert df.columns == ["offset", "value", "timestamp"]
    rows = df.collect()
    assert len(rows) == 120
    assert {(r.offset, r.value) for r in rows} == \
        {(i // 3, f"v{i}".encode()) for i in range(120)}
    assert {int(r.timestamp.timestamp() * 1000) for r in rows} == \
        {1_700_000_000_000 + i for i in range(120)}
    # One column, as the aggregation the declaration is for: the reader ships just it.
    total = read(spark, bootstrap, "value binary", subscribe=filled_topic) \
        .agg(F.sum(F.length("value")).alias("n")).collect()[0].n
    assert total == sum(len(f"v{i}") for i in range(120))


def test_a_declared_schema_with_msgpack_values_and_headers(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        produce: Produce) -> None:
    topic = new_topic(1)
    produce(topic, [{"value": msgpack.packb({"user": "ann", "n": 3}), "key": b"k",
                     "headers": [("h", b"1")]}])
    rows = read(spark, bootstrap, "headers array<struct<key: string, value: binary>>, "
                "value struct<user: string, n: int>, timestampType int", subscribe=topic,
                valueFormat="msgpack", valueSchema="user string, n int",
                includeHeaders="true").collect()
    assert [(r.value.user, r.value.n, [(h.key, h.value) for h in r.headers], r.timestampType)
            for r in rows] == [("ann", 3, [("h", b"1")], 0)]


@pytest.mark.parametrize(("schema", "message"), [
    ("value binary, size int", "column 'size': not a column of the kafkalite source; its "
     "columns: key, value, topic, partition, offset, timestamp, timestampType"),
    ("offset int", "column 'offset': must be bigint, not int"),
    ("headers array<struct<key: string, value: binary>>",
     "column 'headers': needs the option includeHeaders=true"),
])
def test_a_declared_schema_the_source_cannot_fill_fails_naming_the_column(
        spark: SparkSession, bootstrap: str, filled_topic: str, schema: str,
        message: str) -> None:
    with pytest.raises(PySparkException, match=re.escape(message)):
        read(spark, bootstrap, schema, subscribe=filled_topic).collect()


def test_starting_and_ending_offsets_json(spark: SparkSession, bootstrap: str,
                                          filled_topic: str) -> None:
    df = read(spark, bootstrap, subscribe=filled_topic,
              startingOffsets=json.dumps({filled_topic: {"0": 10, "1": -2, "2": 39}}),
              endingOffsets=json.dumps({filled_topic: {"0": 15, "1": 3, "2": -1}}))
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(10, 15)] + [(1, 0), (1, 1), (1, 2)] + [(2, 39)]


def test_assign_and_pattern_select_partitions(spark: SparkSession, bootstrap: str,
                                              filled_topic: str) -> None:
    assigned = read(spark, bootstrap, assign=json.dumps({filled_topic: [2]}))
    assert {r.partition for r in assigned.select("partition").collect()} == {2}
    assert assigned.count() == 40
    pattern = read(spark, bootstrap, subscribePattern=filled_topic.replace("-", "."))
    assert pattern.count() == 120


def test_min_partitions_splits_ranges_and_reads_the_same(spark: SparkSession, bootstrap: str,
                                                         filled_topic: str) -> None:
    df = read(spark, bootstrap, subscribe=filled_topic, minPartitions="7")
    assert df.rdd.getNumPartitions() >= 7
    offsets = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]
    assert sorted(offsets) == [(p, o) for p in range(3) for o in range(40)]


def test_include_headers(spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
                         produce: Produce) -> None:
    topic = new_topic(1)
    produce(topic, [{"value": b"a", "headers": [("trace", b"1"), ("empty", None)]},
                    {"value": b"b"}])
    rows = read(spark, bootstrap, subscribe=topic, includeHeaders="true").orderBy("offset") \
        .collect()
    assert [[(h.key, h.value) for h in r.headers] for r in rows] == \
        [[("trace", b"1"), ("empty", None)], []]


def test_msgpack_values_decode_into_a_struct(spark: SparkSession, bootstrap: str,
                                             new_topic: Callable[[int], str],
                                             produce: Produce) -> None:
    topic = new_topic(2)
    events: list[dict[str, Any]] = [{"user": f"u{i % 4}", "clicks": i, "tags": ["x"] * (i % 3)}
                                    for i in range(30)]
    produce(topic, [{"value": msgpack.packb(e)} for e in events])
    df = read(spark, bootstrap, subscribe=topic, valueFormat="msgpack",
              valueSchema="user string, clicks int, tags array<string>")
    assert df.schema["value"].dataType.simpleString() == \
        "struct<user:string,clicks:int,tags:array<string>>"
    totals = {r.user: r.total for r in df.groupBy(F.col("value.user").alias("user"))
              .agg(F.sum("value.clicks").alias("total")).collect()}
    assert totals == {f"u{u}": sum(i for i in range(30) if i % 4 == u) for u in range(4)}
    assert sorted(len(r.tags) for r in df.select("value.tags").collect()) == \
        sorted(len(e["tags"]) for e in events)


def test_unknown_option_is_an_error_naming_it(spark: SparkSession, bootstrap: str,
                                              filled_topic: str) -> None:
    with pytest.raises(PySparkException, match=r"(?i)startingOfsets: unknown option"):
        read(spark, bootstrap, subscribe=filled_topic, startingOfsets="earliest").count()


def test_batch_write_round_trip(spark: SparkSession, bootstrap: str,
                                new_topic: Callable[[int], str]) -> None:
    target, other = new_topic(2), new_topic(1)
    rows = [(f"k{i}", f"v{i}", i % 2, [("n", str(i).encode())]) for i in range(50)]
    df = spark.createDataFrame(rows, "key string, value string, partition int, "
                                     "headers array<struct<key: string, value: binary>>")
    df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("topic", target).mode("append").save()
    spark.createDataFrame([(other, b"x")], "topic string, value binary").write \
        .format("kafkalite").option("kafka.bootstrap.servers", bootstrap).mode("append").save()

    back = read(spark, bootstrap, subscribe=target, includeHeaders="true").collect()
    assert sorted((r.key, r.value, r.partition, r.headers[0].value) for r in back) == \
        sorted((k.encode(), v.encode(), p, h[0][1]) for k, v, p, h in rows)
    assert [r.value for r in read(spark, bootstrap, subscribe=other).collect()] == [b"x"]


def test_struct_values_are_written_as_msgpack(spark: SparkSession, bootstrap: str,
                                              new_topic: Callable[[int], str]) -> None:
    topic = new_topic(1)
    df = spark.createDataFrame([("a", 1), ("b", 2)], "user string, n int") \
        .selectExpr("named_struct('user', user, 'n', n) AS value")
    df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("topic", topic).mode("append").save()
    raw = [msgpack.unpackb(r.value) for r in read(spark, bootstrap, subscribe=topic).collect()]
    assert sorted(raw, key=lambda v: v["user"]) == [{"user": "a", "n": 1}, {"user": "b", "n": 2}]
    decoded = read(spark, bootstrap, subscribe=topic, valueFormat="msgpack",
                   valueSchema="user string, n int").select("value.n").collect()
    assert sorted(r.n for r in decoded) == [1, 2]


def test_write_without_value_column_is_refused(spark: SparkSession, bootstrap: str) -> None:
    df = spark.createDataFrame([("k",)], "key string")
    with pytest.raises(PySparkException, match="value"):
        df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", "t").mode("append").save()


def test_write_needs_no_save_mode_and_takes_non_null_headers(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str]) -> None:
    topic = new_topic(1)
    df = spark.createDataFrame([("k1", "v1"), ("k2", "v2")], "key string, value string") \
        .withColumn("headers", F.array(F.struct(F.lit("source").alias("key"),
                                                F.lit(b"spark").alias("value"))))
    headers = df.schema["headers"].dataType
    assert isinstance(headers, ArrayType) and isinstance(headers.elementType, StructType)
    assert headers.elementType["key"].nullable is False
    # No .mode(...): Spark's Kafka sink appends by default, and so does this one.
    df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("topic", topic).save()
    df.write.save(format="kafkalite", **{"kafka.bootstrap.servers": bootstrap, "topic": topic})
    back = read(spark, bootstrap, subscribe=topic, includeHeaders="true").collect()
    assert sorted(r.value for r in back) == [b"v1", b"v1", b"v2", b"v2"]
    assert {(h.key, h.value) for r in back for h in r.headers} == {("source", b"spark")}

    with pytest.raises(PySparkException, match="Overwrite is not allowed"):
        df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", topic).mode("overwrite").save()


def test_headers_of_another_type_are_refused_showing_both_types(
        spark: SparkSession, bootstrap: str) -> None:
    df = spark.createDataFrame([("v", [("k", "text")])],
                               "value string, headers array<struct<key: string, value: string>>")
    with pytest.raises(PySparkException) as info:
        df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", "t").save()
    message = str(info.value)
    assert "must be array<struct<key:string,value:binary>>, " \
           "not array<struct<key:string,value:string>>" in message


def test_offsets_by_timestamp(spark: SparkSession, bootstrap: str, filled_topic: str) -> None:
    base = 1_700_000_000_000  # record i of filled_topic: partition i % 3, timestamp base + i
    by_partition = {filled_topic: {"0": base + 30, "1": base + 100, "2": base}}
    df = read(spark, bootstrap, subscribe=filled_topic,
              startingOffsetsByTimestamp=json.dumps(by_partition),
              endingOffsetsByTimestamp=json.dumps(
                  {filled_topic: {"0": base + 60, "1": base + 200, "2": base + 9}}))
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    # partition 0 holds timestamps base+0, +3, ...: offsets 10..19 are base+30 .. base+57
    assert got == [(0, o) for o in range(10, 20)] + [(1, o) for o in range(33, 40)] + \
        [(2, o) for o in range(0, 3)]

    too_late = json.dumps({filled_topic: {"0": base + 500, "1": base, "2": base}})
    with pytest.raises(PySparkException, match="startingOffsetsByTimestampStrategy"):
        read(spark, bootstrap, subscribe=filled_topic,
             startingOffsetsByTimestamp=too_late).count()
    latest = read(spark, bootstrap, subscribe=filled_topic, startingOffsetsByTimestamp=too_late,
                  startingOffsetsByTimestampStrategy="latest")
    assert {r.partition for r in latest.select("partition").collect()} == {1, 2}
    assert latest.count() == 80
    # startingTimestamp wins over startingOffsetsByTimestamp, as in Spark.
    assert read(spark, bootstrap, subscribe=filled_topic, startingTimestamp=str(base + 117),
                startingOffsetsByTimestamp=too_late).count() == 3


def test_max_records_per_partition_cuts_tasks(spark: SparkSession, bootstrap: str,
                                              filled_topic: str) -> None:
    df = read(spark, bootstrap, subscribe=filled_topic, maxRecordsPerPartition="15")
    assert df.rdd.getNumPartitions() == 9  # 40 records per partition: 3 pieces each
    offsets = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert offsets == [(p, o) for p in range(3) for o in range(40)]
    both = read(spark, bootstrap, subscribe=filled_topic, maxRecordsPerPartition="40",
                minPartitions="6")
    assert both.rdd.getNumPartitions() == 6


def test_streaming_only_options_are_ignored_by_a_batch_read(
        spark: SparkSession, bootstrap: str, filled_topic: str) -> None:
    df = read(spark, bootstrap, subscribe=filled_topic, maxOffsetsPerTrigger="5",
              minOffsetsPerTrigger="100", maxTriggerDelay="1m",
              groupIdPrefix="reports", **{"fetchOffset.numRetries": "1",
                                          "fetchOffset.retryIntervalMs": "5"})
    assert df.count() == 120
    named = read(spark, bootstrap, subscribe=filled_topic, **{"kafka.group.id": "etl-reader"})
    assert named.count() == 120


def test_offsets_deleted_after_planning_are_data_loss(spark: SparkSession, bootstrap: str,
                                                      filled_topic: str) -> None:
    """A range whose first offsets are gone when the task fetches (the task learns it from
    the broker's OFFSET_OUT_OF_RANGE): failOnDataLoss fails the read, false reads the rest."""
    from kafkalite import TopicPartition
    from kafkalite.admin import AdminClient

    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.delete_records({TopicPartition(filled_topic, 1): 10})
    from_zero = json.dumps({filled_topic: {"0": 0, "1": 0, "2": 0}})
    with pytest.raises(PySparkException, match=r"offsets 0\.\.9 were deleted"):
        read(spark, bootstrap, subscribe=filled_topic, startingOffsets=from_zero).count()
    rest = read(spark, bootstrap, subscribe=filled_topic, startingOffsets=from_zero,
                failOnDataLoss="false")
    offsets = sorted((r.partition, r.offset) for r in rest.select("partition", "offset").collect())
    assert offsets == [(p, o) for p in range(3) for o in range(10 if p == 1 else 0, 40)]
