"""Consumer-group members running as Spark tasks."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from kafkalite import Producer, TopicPartition
from kafkalite.consumer import Consumer
from kafkalite.spark import run_group_consumers

Produce = Callable[[str, list[dict[str, Any]]], None]


def test_four_members_on_eight_partitions_commit_everything(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        produce: Produce) -> None:
    topic = new_topic(8)
    produce(topic, [{"value": f"v{i}".encode(), "partition": i % 8} for i in range(800)])

    # process_batch=len: executors cannot import this test module, builtins they can.
    stats = run_group_consumers(spark, [topic], "spark-group-test", 4, len, bootstrap,
                                idle_timeout_ms=3000, session_timeout_ms=6000)

    assert [s.member for s in stats] == [0, 1, 2, 3]
    assert sum(s.records for s in stats) >= 800
    owned = {p for s in stats for p in s.partitions}
    assert owned == {f"{topic}-{p}" for p in range(8)}
    assert all(s.generations for s in stats if s.records)
    partitions = [TopicPartition(topic, p) for p in range(8)]
    with Consumer(bootstrap_servers=bootstrap, group_id="spark-group-test",
                  enable_auto_commit=False) as checker:
        committed = {tp: checker.committed(tp) for tp in partitions}
        assert committed == checker.end_offsets(partitions)
        assert set(committed.values()) == {100}


def test_joining_under_the_default_rebalance_delay_is_not_idle_time(
        spark: SparkSession, default_bootstrap: str) -> None:
    # The first join waits group.initial.rebalance.delay.ms=3000 (Kafka's default), as long
    # as the idle timeout: members must still read everything.
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = "spark-default-delay"
    with KafkaAdminClient(bootstrap_servers=default_bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 4, 1)])
    with Producer(bootstrap_servers=default_bootstrap) as producer:
        for i in range(200):
            producer.send(topic, b"v", partition=i % 4)
        producer.flush()

    stats = run_group_consumers(spark, topic, "spark-default-delay", 2, len, default_bootstrap,
                                idle_timeout_ms=3000)

    assert sum(s.records for s in stats) == 200
    assert {p for s in stats for p in s.partitions} == {f"{topic}-{p}" for p in range(4)}


def test_a_dead_member_is_replaced_and_nothing_is_left_uncommitted(
        spark: SparkSession, bootstrap: str, new_topic: Callable[[int], str],
        produce: Produce, tmp_path: Path) -> None:
    topic = new_topic(8)
    produce(topic, [{"value": b"x", "partition": i % 8} for i in range(400)])

    # The first batch any member gets kills that member's Python worker before it commits
    # (a marker file makes it happen exactly once): Spark retries the task, the group
    # rebalances once the dead session expires, and the uncommitted records are read again.
    marker = str(tmp_path / "died")

    def die_once(records: list[Any]) -> None:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
        os._exit(3)

    stats = run_group_consumers(spark, topic, "spark-group-death", 2, die_once,
                                bootstrap, idle_timeout_ms=9000, session_timeout_ms=6000)

    assert sorted(s.attempt for s in stats) == [0, 1]
    assert sum(s.records for s in stats) >= 400
    partitions = [TopicPartition(topic, p) for p in range(8)]
    with Consumer(bootstrap_servers=bootstrap, group_id="spark-group-death",
                  enable_auto_commit=False) as checker:
        assert {tp: checker.committed(tp) for tp in partitions} == {tp: 50 for tp in partitions}
