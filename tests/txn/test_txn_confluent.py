"""confluent-kafka's (librdkafka's) transactional producer against kafkalite-server."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from txn_helpers import TXN_SETTINGS, create_topic, read_all

from kafkalite_server.embedded import EmbeddedCluster


@pytest.fixture
def txn_cluster(cluster_factory: Callable[..., EmbeddedCluster]) -> EmbeddedCluster:
    return cluster_factory(**TXN_SETTINGS)


def _producer(bootstrap: str, transactional_id: str, **extra: object) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "log_level": 3, **extra})


def test_commit_and_abort_read_committed_and_uncommitted(txn_cluster: EmbeddedCluster) -> None:
    bootstrap = txn_cluster.bootstrap_servers
    create_topic(bootstrap, "orders", 2)
    producer = _producer(bootstrap, "tx-commit-abort")
    producer.init_transactions(15)
    producer.begin_transaction()
    for i in range(10):
        producer.produce("orders", value=f"kept-{i}".encode(), partition=i % 2)
    producer.commit_transaction(15)
    producer.begin_transaction()
    for i in range(10):
        producer.produce("orders", value=f"dropped-{i}".encode(), partition=i % 2)
    producer.flush(15)
    producer.abort_transaction(15)
    producer.begin_transaction()
    producer.produce("orders", value=b"last", partition=0)
    producer.commit_transaction(15)

    committed = read_all(bootstrap, "orders", "read_committed", 2)
    everything = read_all(bootstrap, "orders", "read_uncommitted", 2)
    assert sorted(committed) == sorted([f"kept-{i}".encode() for i in range(10)] + [b"last"])
    assert sorted(everything) == sorted(committed + [f"dropped-{i}".encode()
                                                     for i in range(10)])


def test_open_transaction_is_invisible_to_read_committed(txn_cluster: EmbeddedCluster) -> None:
    bootstrap = txn_cluster.bootstrap_servers
    create_topic(bootstrap, "pending")
    done = _producer(bootstrap, "tx-done")
    done.init_transactions(15)
    done.begin_transaction()
    done.produce("pending", value=b"before")
    done.commit_transaction(15)
    open_one = _producer(bootstrap, "tx-open")
    open_one.init_transactions(15)
    open_one.begin_transaction()
    open_one.produce("pending", value=b"open")
    open_one.flush(15)
    done.begin_transaction()
    done.produce("pending", value=b"after")
    done.commit_transaction(15)
    assert read_all(bootstrap, "pending", "read_committed", timeout=5) == [b"before"]
    assert read_all(bootstrap, "pending", "read_uncommitted") == [b"before", b"open", b"after"]
    open_one.commit_transaction(15)
    assert read_all(bootstrap, "pending", "read_committed") == [b"before", b"open", b"after"]


def test_second_producer_fences_the_first(txn_cluster: EmbeddedCluster) -> None:
    bootstrap = txn_cluster.bootstrap_servers
    create_topic(bootstrap, "fenced")
    first = _producer(bootstrap, "tx-same")
    first.init_transactions(15)
    first.begin_transaction()
    first.produce("fenced", value=b"zombie")
    first.flush(15)
    second = _producer(bootstrap, "tx-same")
    second.init_transactions(30)  # aborts the first one's transaction
    second.begin_transaction()
    second.produce("fenced", value=b"winner")
    second.commit_transaction(15)
    with pytest.raises(KafkaException) as raised:
        first.produce("fenced", value=b"late")
        first.commit_transaction(15)
    assert raised.value.args[0].fatal()
    assert read_all(bootstrap, "fenced", "read_committed") == [b"winner"]


def test_consume_transform_produce_commits_offsets_with_the_output(
        txn_cluster: EmbeddedCluster) -> None:
    bootstrap = txn_cluster.bootstrap_servers
    create_topic(bootstrap, "in")
    create_topic(bootstrap, "out")
    source = Producer({"bootstrap.servers": bootstrap})
    for i in range(6):
        source.produce("in", value=str(i).encode())
    source.flush(15)

    def run_batch(commit: bool) -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": "read_committed", "log_level": 3})
        consumer.subscribe(["in"])
        producer = _producer(bootstrap, "tx-ctp")
        producer.init_transactions(15)
        messages = []
        deadline = time.monotonic() + 20
        while len(messages) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                messages.append(message)
        assert len(messages) == 3
        producer.begin_transaction()
        for message in messages:
            producer.produce("out", value=b"x" + message.value())
        last = messages[-1]
        producer.send_offsets_to_transaction(
            [TopicPartition("in", last.partition(), last.offset() + 1)],
            consumer.consumer_group_metadata(), 15)
        if commit:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)
        consumer.close()

    run_batch(commit=False)  # aborted: neither output nor offsets
    run_batch(commit=True)
    run_batch(commit=True)
    assert read_all(bootstrap, "out", "read_committed") == [b"x0", b"x1", b"x2", b"x3", b"x4",
                                                             b"x5"]
    check = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp", "log_level": 3})
    committed = check.committed([TopicPartition("in", 0)], timeout=15)
    check.close()
    assert committed[0].offset == 6


def test_transaction_timeout_is_checked_and_enforced(txn_cluster: EmbeddedCluster) -> None:
    bootstrap = txn_cluster.bootstrap_servers
    create_topic(bootstrap, "slow")
    too_long = _producer(bootstrap, "tx-too-long", **{"transaction.timeout.ms": 900_001})
    with pytest.raises(KafkaException) as raised:
        too_long.init_transactions(15)
    assert "INVALID_TRANSACTION_TIMEOUT" in str(raised.value) or \
        raised.value.args[0].code() == 50
    slow = _producer(bootstrap, "tx-slow", **{"transaction.timeout.ms": 1000})
    slow.init_transactions(15)
    slow.begin_transaction()
    slow.produce("slow", value=b"never")
    slow.flush(15)
    time.sleep(2.5)  # the coordinator's check runs every 200 ms
    other = _producer(bootstrap, "tx-other")
    other.init_transactions(15)
    other.begin_transaction()
    other.produce("slow", value=b"after")
    other.commit_transaction(15)
    # had the slow transaction stayed open, the LSO would stop read_committed before both
    assert read_all(bootstrap, "slow", "read_committed") == [b"after"]
    assert read_all(bootstrap, "slow", "read_uncommitted") == [b"never", b"after"]
    with pytest.raises(KafkaException):
        slow.commit_transaction(15)
