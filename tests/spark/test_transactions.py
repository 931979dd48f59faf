"""The transactional sink (``transactionalIdPrefix``): each Spark task's rows are one Kafka
transaction, so read_committed readers see a task's output whole or not at all, and a
retried task's output exactly once."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafkalite import Consumer, Producer
from kafkalite.errors import ConfigError
from kafkalite.producer.transactions import ProducerFencedTransactionError
from kafkalite.spark.options import parse_write_options
from kafkalite.structs import TopicPartition


def write(df: DataFrame, bootstrap: str, topic: str, prefix: str) -> None:
    df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("topic", topic).option("transactionalIdPrefix", prefix).save()


def values(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[bytes]:
    """Every value in ``topic`` as a consumer with ``isolation`` sees it (a bounded read up to
    the end offsets that isolation level reports)."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                  enable_auto_commit=False) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        seen: list[bytes] = []
        for _ in range(200):
            if all(consumer.position(tp) >= end[tp] for tp in tps):
                break
            for records in consumer.poll(timeout_ms=200).values():
                seen += [record.value for record in records]
        else:
            pytest.fail(f"{isolation} read of {topic} did not reach {end}")
    return seen


def spark_values(spark: SparkSession, bootstrap: str, topic: str) -> list[bytes]:
    """The same through the kafkalite source, reading read_committed."""
    df = spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("kafka.isolation.level", "read_committed").option("subscribe", topic).load()
    return [row.value for row in df.select("value").collect()]


_prefixes = itertools.count()


@pytest.fixture
def prefix() -> str:
    return f"spark-tx-{next(_prefixes)}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def small_arrow_batches(spark: SparkSession) -> Iterator[None]:
    """Writers get Arrow batches of 100 rows, so a task sends several before it fails."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, "100")
    yield
    if before is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, before)


def test_every_task_commits_its_rows(spark: SparkSession, bootstrap: str,
                                     new_topic: Callable[[int], str], prefix: str) -> None:
    topic = new_topic(2)
    df = spark.range(0, 400, numPartitions=4).select(
        F.col("id").cast("string").alias("value"), (F.col("id") % 2).cast("int").alias("partition"))
    write(df, bootstrap, topic, prefix)
    expected = sorted(str(i).encode() for i in range(400))
    assert sorted(values(bootstrap, topic, 2, "read_committed")) == expected
    assert sorted(spark_values(spark, bootstrap, topic)) == expected


def test_a_failed_attempt_is_invisible_and_its_retry_is_seen_once(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str], prefix: str,
        small_arrow_batches: None) -> None:
    """The first attempt of the only task sends 200 rows, then meets a bad row (a null topic
    the first attempt only) and fails; Spark retries it (local[2, 2]) and the retry writes
    all 300. The aborted 200 are in the log, but read_committed never sees them."""
    topic = new_topic(1)

    def first_attempt() -> bool:
        from pyspark import TaskContext

        context = TaskContext.get()
        return context is not None and context.attemptNumber() == 0

    on_first_attempt = F.udf(first_attempt, "boolean").asNondeterministic()
    df = spark.range(0, 300, numPartitions=1).select(
        F.col("id").cast("string").alias("value"),
        F.when(on_first_attempt() & (F.col("id") == 250), F.lit(None))
        .otherwise(F.lit(topic)).alias("topic"))
    df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("transactionalIdPrefix", prefix).save()

    committed = values(bootstrap, topic, 1, "read_committed")
    assert sorted(committed) == sorted(str(i).encode() for i in range(300))
    everything = values(bootstrap, topic, 1, "read_uncommitted")
    assert len(everything) == 500, "the failed attempt's 200 rows should be in the log"
    assert everything[:200] == [str(i).encode() for i in range(200)]
    assert sorted(spark_values(spark, bootstrap, topic)) == sorted(committed)


def test_a_task_fences_an_earlier_attempt_left_open(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        prefix: str) -> None:
    """An attempt that died without aborting (a killed executor) leaves its transaction
    open; the next attempt, with the same transactional id, fences it and aborts it."""
    topic = new_topic(1)
    zombie = Producer(bootstrap_servers=bootstrap, transactional_id=f"{prefix}-0")
    zombie.init_transactions()
    zombie.begin_transaction()
    for i in range(50):
        zombie.send(topic, f"zombie-{i}".encode())
    zombie.flush()

    write(spark.range(0, 100, numPartitions=1).select(F.col("id").cast("string").alias("value")),
          bootstrap, topic, prefix)

    with pytest.raises(ProducerFencedTransactionError):
        zombie.commit_transaction()
    zombie.close()
    assert sorted(values(bootstrap, topic, 1, "read_committed")) == \
        sorted(str(i).encode() for i in range(100))
    assert len(values(bootstrap, topic, 1, "read_uncommitted")) == 150


def test_a_setting_that_rules_out_transactions_fails_on_the_driver(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str]) -> None:
    topic = new_topic(1)
    df = spark.range(1).select(F.col("id").cast("string").alias("value"))
    with pytest.raises(PySparkException, match=r"transactionalIdPrefix: .*acks"):
        df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", topic).option("transactionalIdPrefix", "p") \
            .option("kafka.acks", "1").save()


@pytest.mark.parametrize(("options", "key"), [
    ({"transactionalIdPrefix": " "}, "transactionalIdPrefix"),
    ({"kafka.transactional.id": "one"}, "kafka.transactional.id"),
    ({"transactionalIdPrefix": "p", "kafka.enable.idempotence": "false"},
     "kafka.enable.idempotence"),
])
def test_transactional_options_are_checked(options: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_write_options({"kafka.bootstrap.servers": "h:1", "topic": "t", **options})
    assert info.value.key == key


def test_each_task_gets_its_own_transactional_id() -> None:
    options = parse_write_options({"kafka.bootstrap.servers": "h:1", "topic": "t",
                                   "transactionalIdPrefix": "orders-sink"})
    assert [options.transactional_id(p) for p in (0, 7)] == \
        ["orders-sink-0", "orders-sink-7"]
    assert parse_write_options({"kafka.bootstrap.servers": "h:1"}).transactional_id(0) is None


def test_a_streaming_micro_batch_is_committed_per_task_and_a_replay_writes_it_again(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        produce: Callable[[str, list[dict[str, Any]]], None], prefix: str,
        tmp_path: Path) -> None:
    """What docs/spark.md states: each micro-batch task is one transaction, and a batch that
    Spark replays after a restart (its tasks committed, its commit-log entry is missing) is
    written again, so read_committed readers see its rows twice (at least once per batch)."""
    source, target = new_topic(2), new_topic(1)
    produce(source, [{"value": f"e{i}".encode(), "partition": i % 2} for i in range(60)])
    checkpoint = tmp_path / "checkpoint"

    def run() -> None:
        query = spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
            .option("subscribe", source).option("startingOffsets", "earliest").load() \
            .select("value").writeStream.format("kafkalite") \
            .option("kafka.bootstrap.servers", bootstrap).option("topic", target) \
            .option("transactionalIdPrefix", prefix) \
            .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
        assert query.awaitTermination(120)
        assert query.exception() is None

    run()
    once = sorted(f"e{i}".encode() for i in range(60))
    assert sorted(values(bootstrap, target, 1, "read_committed")) == once
    run()  # nothing new: nothing written
    assert sorted(values(bootstrap, target, 1, "read_committed")) == once

    commits = sorted((checkpoint / "commits").iterdir(), key=lambda p: p.name)
    assert [p.name for p in commits if not p.name.startswith(".")] == ["0"]
    for path in commits:  # the batch's commit-log entry (and its checksum file)
        path.unlink()
    run()
    assert sorted(values(bootstrap, target, 1, "read_committed")) == sorted(once * 2)


def test_a_task_without_rows_commits_an_empty_transaction(bootstrap: str, prefix: str) -> None:
    from kafkalite.spark.writers import produce_batches

    options = parse_write_options({"kafka.bootstrap.servers": bootstrap, "topic": "unused",
                                   "transactionalIdPrefix": prefix})
    for _ in range(2):  # the second attempt fences the first, which left nothing open
        assert produce_batches(options, iter([]), options.transactional_id(0)) == 0
