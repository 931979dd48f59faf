"""The source on Consumer.poll_arrow and the sink on Producer.send_batch: what those paths
must carry over from the per-record ones (ordering per partition, routing by topic and
partition columns, the broker's timestamps)."""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka.admin import KafkaAdminClient, NewTopic
from pyspark.sql import SparkSession

from kafkalite import Consumer, TopicPartition


def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple]]:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with Consumer(bootstrap_servers=bootstrap) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        got: dict[int, list[tuple]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < sum(ends.values()) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                got[tp.partition] += [(r.offset, r.key, r.value, r.headers) for r in records]
    return got


def test_sink_routes_rows_by_topic_and_partition_columns_in_row_order(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str]) -> None:
    first, second = new_topic(3), new_topic(2)
    rows = [(first if i % 3 else second, i % 2, f"k{i}", f"v{i}".encode(),
             [("i", str(i).encode())] if i % 4 == 0 else None) for i in range(300)]
    df = spark.createDataFrame(rows, "topic string, partition int, key string, value binary, "
                                     "headers array<struct<key: string, value: binary>>")
    df.coalesce(1).write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .mode("append").save()

    for topic, partitions in ((first, 3), (second, 2)):
        got = _read_all(bootstrap, topic, partitions)
        for partition in range(partitions):
            expected = [(k.encode(), v, tuple(h or ())) for t, p, k, v, h in rows
                        if t == topic and p == partition]
            assert [(key, value, headers) for _, key, value, headers in got[partition]] == \
                expected
            assert [offset for offset, *_ in got[partition]] == list(range(len(expected)))


def test_source_reports_log_append_time(spark: SparkSession, bootstrap: str,
                                        produce: Callable) -> None:
    topic = "spark-bulk-log-append-time"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1,
                                  topic_configs={"message.timestamp.type": "LogAppendTime"})])
    admin.close()
    before = time.time()
    produce(topic, [{"value": b"a", "timestamp_ms": 1_000}, {"value": b"b", "timestamp_ms": 2_000}])
    rows = spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap) \
        .option("subscribe", topic).load().collect()
    assert [(r.value, r.timestampType) for r in rows] == [(b"a", 1), (b"b", 1)]
    assert all(r.timestamp.timestamp() >= before - 5 for r in rows)  # the broker's, not 1970
