"""Transactions on a three-broker cluster (EmbeddedCluster over the in-memory coordination
backend: registration, controller, leader election and follower replication as in a
ZooKeeper deployment).

- ``__transaction_state`` and ``__consumer_offsets`` take Kafka's defaults: replication
  factor 3, and min.insync.replicas 2 for the transaction log; one broker caps them at 1.
- An open transaction survives the crash of its coordinator's broker: the producer finds
  the new coordinator and commits, and read_committed sees exactly that transaction.
- With fewer replicas in the ISR than min.insync.replicas, the coordinator refuses to
  promise a state change (COORDINATOR_NOT_AVAILABLE) until a follower is back.
- Markers for partitions led by other brokers than the coordinator's go out with
  WriteTxnMarkers: commit shows the records to read_committed (confluent-kafka), abort
  hides them, and the last stable offset of those partitions (kafka-python's
  read_committed ListOffsets) moves to the high watermark once each transaction ends.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPartition
from polling import until
from txn_helpers import read_all

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import CoordinatorNotAvailableError
from kafkalite.protocol.exchange import RequestExchange
from kafkalite_server import EmbeddedCluster
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.internal_topics import TRANSACTION_STATE_TOPIC
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.security.inter_broker import PeerSecurity

WAIT_S = 40
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "zookeeper.session.timeout.ms": "1000",
    "replica.lag.time.max.ms": "3000",
    "controlled.shutdown.retry.backoff.ms": "50",
    "controlled.shutdown.max.retries": "1",
}
"""Small internal topics and quick failure detection; the replication factor and
min.insync.replicas of the internal topics are left at their defaults on purpose."""


_until = functools.partial(until, timeout=WAIT_S)


@pytest.fixture
def three() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=3, config=SETTINGS) as cluster:
        yield cluster


def _producer(bootstrap: str, transactional_id: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "transaction.timeout.ms": 60_000, "log_level": 0})


def _create(bootstrap: str, topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, len(assignment), replica_assignment=assignment,
                                  config={"min.insync.replicas": "2"}
                                  if len(assignment[0]) >= 2 else {})])[topic].result(15)


def _topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("topic", topic)
    entries = admin.describe_configs([resource])[resource].result(15)
    return {name: entry.value for name, entry in entries.items()}


def _replicas(cluster: EmbeddedCluster, topic: str) -> list[tuple[int, ...]]:
    """Each partition's replicas, as a running broker's metadata has them."""
    cache = cluster.brokers[0].metadata_cache
    known = _until(lambda: cache.partitions_of(topic), f"{topic} in the metadata")
    return [tuple(_until(partial(cache.partition, topic, index), f"{topic}-{index}").replicas)
            for index in range(len(known))]


def _coordinator_of(cluster: EmbeddedCluster, transactional_id: str) -> int:
    broker = cluster.brokers[0]
    partition = broker.txn_coordinator.coordinator.partition_for(transactional_id)
    state = broker.metadata_cache.partition(TRANSACTION_STATE_TOPIC, partition)
    assert state is not None
    return state.leader


def test_internal_topics_take_kafka_replication_defaults(three: EmbeddedCluster) -> None:
    bootstrap = three.bootstrap_servers
    producer = _producer(bootstrap, "tx-defaults")
    producer.init_transactions(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "defaults",
                         "enable.auto.commit": False, "log_level": 0})
    _create(bootstrap, "seen", [[0, 1, 2]])
    consumer.assign([ConfluentPartition("seen", 0, 0)])
    consumer.commit(offsets=[ConfluentPartition("seen", 0, 0)], asynchronous=False)
    consumer.close()

    assert all(len(set(r)) == 3 for r in _replicas(three, TRANSACTION_STATE_TOPIC))
    config = _topic_config(bootstrap, TRANSACTION_STATE_TOPIC)
    assert config["min.insync.replicas"] == "2"
    assert config["cleanup.policy"] == "compact"
    assert all(len(set(r)) == 3 for r in _replicas(three, OFFSETS_TOPIC))


def test_one_broker_caps_the_internal_topics_at_one_replica() -> None:
    with EmbeddedCluster(num_brokers=1, config=SETTINGS) as one:
        producer = _producer(one.bootstrap_servers, "tx-alone")
        producer.init_transactions(30)
        _create(one.bootstrap_servers, "alone", [[0]])
        producer.begin_transaction()
        producer.produce("alone", value=b"only")
        producer.commit_transaction(30)
        assert _replicas(one, TRANSACTION_STATE_TOPIC) == [(0,)] * 3
        assert _topic_config(one.bootstrap_servers,
                             TRANSACTION_STATE_TOPIC)["min.insync.replicas"] == "1"
        assert read_all(one.bootstrap_servers, "alone", "read_committed") == [b"only"]


def test_an_open_transaction_survives_its_coordinators_crash(three: EmbeddedCluster) -> None:
    bootstrap = three.bootstrap_servers
    _create(bootstrap, "ledger", [[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    producer = _producer(bootstrap, "tx-survivor")
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(6):
        producer.produce("ledger", value=f"before-{i}".encode(), partition=i % 3)
    producer.flush(30)
    coordinator = _coordinator_of(three, "tx-survivor")

    three.kill_broker(coordinator)
    for i in range(6):
        producer.produce("ledger", value=f"after-{i}".encode(), partition=i % 3)
    producer.commit_transaction(60)
    assert _coordinator_of(three, "tx-survivor") != coordinator

    three.restart_broker(coordinator)
    producer.begin_transaction()
    producer.produce("ledger", value=b"dropped", partition=0)
    producer.flush(30)
    producer.abort_transaction(60)
    expected = sorted([f"before-{i}".encode() for i in range(6)] +
                      [f"after-{i}".encode() for i in range(6)])
    assert sorted(read_all(bootstrap, "ledger", "read_committed", 3)) == expected
    assert len(read_all(bootstrap, "ledger", "read_uncommitted", 3)) == 13


def _end_offsets(bootstrap: str, topic: str, isolation: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             enable_auto_commit=False)
    try:
        ends = consumer.end_offsets([KafkaPartition(topic, p) for p in (0, 1)])
    finally:
        consumer.close()
    return {tp.partition: offset for tp, offset in ends.items()}


def test_markers_reach_partitions_led_by_other_brokers(
        three: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """... over one kept-open connection per destination broker, not one per
    WriteTxnMarkers."""
    marker_connections: list[int] = []
    connect = PeerSecurity.connect

    async def counted(self: PeerSecurity, endpoint: BrokerEndpoint,
                      exchange: RequestExchange) -> Any:
        if (exchange.client_id or "").startswith("txn-coordinator-"):
            marker_connections.append(endpoint.node_id)
        return await connect(self, endpoint, exchange)

    monkeypatch.setattr(PeerSecurity, "connect", counted)
    bootstrap = three.bootstrap_servers
    producer = _producer(bootstrap, "tx-remote")
    producer.init_transactions(30)
    coordinator = _coordinator_of(three, "tx-remote")
    others = [b for b in (0, 1, 2) if b != coordinator]
    _create(bootstrap, "remote", [[others[0], others[1]], [others[1], others[0]]])
    assert all(coordinator not in replicas for replicas in _replicas(three, "remote"))

    producer.begin_transaction()
    for i in range(6):
        producer.produce("remote", value=f"kept-{i}".encode(), partition=i % 2)
    producer.flush(30)
    assert _end_offsets(bootstrap, "remote", "read_uncommitted") == {0: 3, 1: 3}
    assert _end_offsets(bootstrap, "remote", "read_committed") == {0: 0, 1: 0}
    producer.commit_transaction(30)
    # Each partition holds its three records and the commit marker; the LSO reaches it.
    _until(lambda: _end_offsets(bootstrap, "remote", "read_committed") == {0: 4, 1: 4},
           "the last stable offsets after the commit")
    assert sorted(read_all(bootstrap, "remote", "read_committed", 2)) == sorted(
        f"kept-{i}".encode() for i in range(6))

    producer.begin_transaction()
    for i in range(4):
        producer.produce("remote", value=f"dropped-{i}".encode(), partition=i % 2)
    producer.flush(30)
    assert _end_offsets(bootstrap, "remote", "read_committed") == {0: 4, 1: 4}
    producer.abort_transaction(30)
    _until(lambda: _end_offsets(bootstrap, "remote", "read_committed") == {0: 7, 1: 7},
           "the last stable offsets after the abort")
    assert sorted(read_all(bootstrap, "remote", "read_committed", 2)) == sorted(
        f"kept-{i}".encode() for i in range(6))
    assert len(read_all(bootstrap, "remote", "read_uncommitted", 2)) == 10
    # Two transactions ended on two leaders each: four WriteTxnMarkers, two connections.
    assert sorted(marker_connections) == sorted(others)


def test_a_coordinator_without_min_insync_replicas_promises_nothing(
        three: EmbeddedCluster, wire: Callable[[str], Any]) -> None:
    """min.insync.replicas 2 on the transaction log: with its followers gone the
    coordinator answers COORDINATOR_NOT_AVAILABLE (its write is not in enough replicas),
    and serves the id again once a follower is back in the ISR."""
    producer = _producer(three.bootstrap_servers, "tx-lonely")
    producer.init_transactions(30)
    del producer
    coordinator = _coordinator_of(three, "tx-lonely")
    broker = three.broker(coordinator)
    partition = broker.txn_coordinator.coordinator.partition_for("tx-lonely")
    for other in (0, 1, 2):
        if other != coordinator:
            three.kill_broker(other)
    state = broker.replica_manager.partitions[(TRANSACTION_STATE_TOPIC, partition)]
    _until(lambda: state.isr == (coordinator,), "the ISR to shrink to the leader")
    client = wire(f"{broker.endpoint.host}:{broker.endpoint.port}")
    body = {"transactional_id": "tx-lonely", "transaction_timeout_ms": 10_000}
    assert client.call(ApiKey.INIT_PRODUCER_ID, 1, body)["error_code"] == \
        CoordinatorNotAvailableError.errno

    three.restart_broker(next(b for b in (0, 1, 2) if b != coordinator))
    _until(lambda: len(state.isr) == 2, "a follower back in the ISR")
    answer = client.call(ApiKey.INIT_PRODUCER_ID, 1, body)
    assert answer["error_code"] == 0 and answer["producer_epoch"] >= 1
