"""kafkalite's transactional Producer and read_committed Consumer, against kafkalite-server
and against librdkafka's mock cluster (which implements transactions)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import confluent_kafka
import pytest
from txn_helpers import TXN_SETTINGS, create_topic, read_all

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.producer.transactions import (
    AbortableTransactionError,
    ProducerFencedTransactionError,
)
from kafkalite.protocol.errors import ProducerFencedError
from kafkalite_server.embedded import EmbeddedCluster


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    handle = confluent_kafka.Producer({"test.mock.num.brokers": 3, "log_level": 3})
    brokers = handle.list_topics(timeout=10).brokers.values()
    yield ",".join(f"{b.host}:{b.port}" for b in brokers)
    handle.flush(1)


@pytest.fixture(params=["kafkalite-server", "librdkafka-mock"])
def bootstrap(request: pytest.FixtureRequest,
              cluster_factory: Callable[..., EmbeddedCluster]) -> str:
    if request.param == "kafkalite-server":
        return cluster_factory(**TXN_SETTINGS).bootstrap_servers
    return str(request.getfixturevalue("mock_bootstrap"))


def _create(bootstrap: str, topic: str) -> None:
    """The mock cluster creates topics on first use; kafkalite-server gets them created."""
    if "," not in bootstrap:
        create_topic(bootstrap, topic)


def _consume(bootstrap: str, topic: str, isolation: str, expected: int) -> list[bytes]:
    consumer = Consumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                        auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 15
    while len(values) < expected and time.monotonic() < deadline:
        for records in consumer.poll(200).values():
            values += [record.value for record in records]
    for records in consumer.poll(500).values():  # nothing more may come
        values += [record.value for record in records]
    consumer.close()
    return values


def test_commit_abort_and_isolation(bootstrap: str) -> None:
    topic = f"sdk-{time.monotonic_ns()}"
    _create(bootstrap, topic)
    with Producer(bootstrap_servers=bootstrap, transactional_id=f"sdk-{topic}") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(5):
            producer.send(topic, f"c{i}".encode(), partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, f"a{i}".encode(), partition=0)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"c5", partition=0)
        producer.commit_transaction()
    committed = [f"c{i}".encode() for i in range(6)]
    everything = [*committed[:5], b"a0", b"a1", b"a2", b"c5"]
    assert _consume(bootstrap, topic, "read_uncommitted", 9) == everything
    if "," in bootstrap:
        # librdkafka's mock cluster keeps no aborted-transaction list: its read_committed
        # fetches return aborted records to librdkafka's own consumer too
        return
    assert _consume(bootstrap, topic, "read_committed", 6) == committed


def test_fencing_is_fatal_and_typed(bootstrap: str) -> None:
    if "," in bootstrap:
        pytest.skip("librdkafka's mock cluster accepts the older epoch (it does not fence)")
    topic = f"fence-{time.monotonic_ns()}"
    _create(bootstrap, topic)
    first = Producer(bootstrap_servers=bootstrap, transactional_id=f"f-{topic}")
    first.init_transactions()
    second = Producer(bootstrap_servers=bootstrap, transactional_id=f"f-{topic}")
    second.init_transactions()
    first.begin_transaction()
    with pytest.raises(ProducerFencedTransactionError) as raised:
        first.send(topic, b"zombie", partition=0)
        first.commit_transaction()
    assert isinstance(raised.value, ProducerFencedError)
    with pytest.raises(ProducerFencedTransactionError):
        first.begin_transaction()
    second.begin_transaction()
    second.send(topic, b"ok", partition=0)
    second.commit_transaction()
    first.close()
    second.close()
    assert _consume(bootstrap, topic, "read_uncommitted", 1) == [b"ok"]


def test_send_offsets_to_transaction_commits_the_group(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    bootstrap = cluster_factory(**TXN_SETTINGS).bootstrap_servers
    create_topic(bootstrap, "src")
    with Producer(bootstrap_servers=bootstrap) as plain:
        for i in range(4):
            plain.send("src", str(i).encode(), partition=0)
    consumer = Consumer("src", bootstrap_servers=bootstrap, group_id="sdk-ctp",
                        auto_offset_reset="earliest", enable_auto_commit=False,
                        isolation_level="read_committed")
    producer = Producer(bootstrap_servers=bootstrap, transactional_id="sdk-ctp")
    producer.init_transactions()
    records = []
    deadline = time.monotonic() + 20
    while len(records) < 4 and time.monotonic() < deadline:
        for batch in consumer.poll(200).values():
            records += batch
    for commit in (False, True):
        producer.begin_transaction()
        for record in records:
            producer.send("dst", b"y" + record.value, partition=0)
        producer.send_offsets_to_transaction({TopicPartition("src", 0): records[-1].offset + 1},
                                             consumer.group_metadata())
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
            assert consumer.committed(TopicPartition("src", 0)) is None
    assert consumer.committed(TopicPartition("src", 0)) == 4
    consumer.close()
    producer.close()
    assert read_all(bootstrap, "dst", "read_committed") == [b"y0", b"y1", b"y2", b"y3"]


def test_misuse_raises_before_any_request(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    bootstrap = cluster_factory(**TXN_SETTINGS).bootstrap_servers
    producer = Producer(bootstrap_servers=bootstrap, transactional_id="misuse")
    with pytest.raises(KafkaError, match="begin_transaction"):
        producer.begin_transaction()
    producer.init_transactions()
    with pytest.raises(KafkaError, match="send"):
        producer.send("x", b"outside a transaction")
    with pytest.raises(KafkaError, match="commit_transaction"):
        producer.commit_transaction()
    producer.close()
    assert issubclass(AbortableTransactionError, KafkaError)
