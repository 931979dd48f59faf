"""Compaction of a topic written in transactions by confluent-kafka's transactional
producer: the broker's cleaner discards aborted records, so both a read_committed and a
read_uncommitted consumer from the start see each key's last committed value."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kafkalite_server.embedded import EmbeddedCluster

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_api = pytest.importorskip("confluent_kafka.admin")

TOPIC = "compacted-txn"
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.ms": "100", "segment.bytes": "4096",
                "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "3600000",
                "file.delete.delay.ms": "1000"}
KEYS = [f"k{i}" for i in range(8)]


def _read(servers: str, isolation: str) -> list[tuple[str, str]]:
    """(key, value) of every record from the start to the end (the LSO for read_committed)."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": servers, "group.id": f"check-{isolation}",
        "isolation.level": isolation, "enable.auto.commit": False,
        "enable.partition.eof": True, "log_level": 3})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0,
                                                    confluent_kafka.OFFSET_BEGINNING)])
    seen = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, "no end of partition within 10 s"
            if msg.error():
                assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF
                return seen
            seen.append((msg.key().decode(), msg.value().decode()))
    finally:
        consumer.close()


def test_aborted_records_are_cleaned_and_committed_values_win(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    cluster = cluster_factory(transaction_state_log_num_partitions="3",
                              log_cleaner_backoff_ms="50")
    servers = cluster.bootstrap_servers
    admin = admin_api.AdminClient({"bootstrap.servers": servers})
    admin.create_topics([admin_api.NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIG)])[TOPIC].result(30)
    txn = confluent_kafka.Producer({"bootstrap.servers": servers, "log_level": 3,
                                    "transactional.id": "compacting", "linger.ms": 5})
    plain = confluent_kafka.Producer({"bootstrap.servers": servers, "log_level": 3,
                                      "enable.idempotence": True})
    txn.init_transactions(30)
    expected: dict[str, str] = {}
    for round_ in range(6):
        txn.begin_transaction()
        for key in KEYS:
            txn.produce(TOPIC, key=key, value=f"committed-{round_}-" + "x" * 80, partition=0)
        txn.commit_transaction(30)
        expected.update({key: f"committed-{round_}-" + "x" * 80 for key in KEYS})
        txn.begin_transaction()  # the newest write of every key, but aborted
        for key in KEYS:
            txn.produce(TOPIC, key=key, value=f"aborted-{round_}", partition=0)
        txn.flush(30)
        plain.produce(TOPIC, key=f"plain-{round_ % 2}", value=f"plain-{round_}", partition=0)
        assert plain.flush(30) == 0
        expected[f"plain-{round_ % 2}"] = f"plain-{round_}"
        txn.abort_transaction(30)
    time.sleep(0.2)  # past segment.ms: the next write rolls, so everything above is cleanable
    txn.begin_transaction()
    txn.produce(TOPIC, key="tail", value="roll", partition=0)
    txn.commit_transaction(30)
    expected["tail"] = "roll"

    deadline = time.monotonic() + 60
    while True:
        everything = _read(servers, "read_uncommitted")
        keys = [key for key, _ in everything]
        cleaned = (len(keys) == len(set(keys))
                   and not any(value.startswith("aborted") for _, value in everything))
        if cleaned or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert cleaned, f"not cleaned: {everything}"
    assert dict(everything) == expected
    assert dict(_read(servers, "read_committed")) == expected
