"""Partition reassignment (KIP-455) on ``kafkalite-server`` processes over a real ZooKeeper,
driven by kafka-python's admin client: a move onto a broker that joined later under an
acks=all producer with nothing acknowledged lost, a controller failover in the middle of a
move, a cancel, and Kafka's errors for bad targets.

A move is held in the middle by stopping (SIGSTOP) the broker being added: it cannot fetch,
so it cannot join the ISR, for a few seconds (less than the session timeout)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from polling import until
from test_cluster_processes import WAIT_S, Cluster, running_cluster, wait_until

from kafkalite_server.cluster import metadata_layout as layout
from tests.conftest import BrokerProcess


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, zookeeper: Any) -> Iterator[Cluster]:
    """Brokers 1-3; broker 4 joins in the first test."""
    with running_cluster(tmp_path_factory.mktemp("reassign"), zookeeper.connect + "/reassign",
                         BrokerProcess) as started:
        yield started


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    client = _admin(cluster)
    yield client
    client.close()


def _admin(cluster: Cluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=_bootstrap(cluster), request_timeout_ms=20_000)


def _bootstrap(cluster: Cluster) -> str:
    return ",".join(b.bootstrap_servers for b in cluster.brokers.values()
                    if b.process is not None)


def _create(admin: KafkaAdminClient, topic: str, assignment: dict[int, list[int]]) -> None:
    admin.create_topics([NewTopic(topic, -1, -1, replica_assignments=assignment)])


def _stored(cluster: Cluster, topic: str) -> dict[str, Any]:
    return json.loads(cluster.zk.get(layout.topic_path(topic))[0])


def _replicas(cluster: Cluster, topic: str) -> dict[int, list[int]]:
    return {int(p): r for p, r in _stored(cluster, topic)["partitions"].items()}


def _leader(cluster: Cluster, topic: str) -> int:
    return int(json.loads(cluster.zk.get(layout.partition_state_path(topic, 0))[0])["leader"])


def _moved(admin: KafkaAdminClient, cluster: Cluster, topic: str,
           target: dict[int, list[int]]) -> bool:
    return (not admin.list_partition_reassignments([TopicPartition(topic, p) for p in target])
            and _replicas(cluster, topic) == target)


@contextlib.contextmanager
def _paused(broker: BrokerProcess) -> Iterator[None]:
    assert broker.process is not None
    os.kill(broker.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)


def _log_dir_gone(broker: BrokerProcess, topic: str, partition: int) -> bool:
    return not any(broker.data_dir.glob(f"**/{topic}-{partition}"))


class _Producing:
    """An idempotent acks=all producer writing numbered records until stopped; keeps the
    numbers the brokers acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acknowledged: set[bytes] = set()
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "enable.idempotence": True, "linger.ms": 5})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.acknowledged.add(message.value())

    def _run(self) -> None:
        number = 0
        while not self._stop.is_set():
            self.producer.produce(self.topic, str(number).encode(), on_delivery=self._delivered)
            self.producer.poll(0.005)
            number += 1

    def stop(self) -> set[bytes]:
        self._stop.set()
        self._thread.join(timeout=WAIT_S)
        assert self.producer.flush(WAIT_S) == 0
        return self.acknowledged


def _read_all(bootstrap: str, topic: str, partitions: int, expected: set[bytes]) -> set[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reassignment-check",
                         "enable.auto.commit": False})
    consumer.assign([ConfluentPartition(topic, p, -2) for p in range(partitions)])
    seen: set[bytes] = set()

    def caught_up() -> bool:
        for message in consumer.consume(500, timeout=0.5):
            if message.error() is None:
                seen.add(message.value())
        return expected <= seen
    try:
        until(caught_up, "every acknowledged record", timeout=WAIT_S)
    finally:
        consumer.close()
    return seen


def test_moving_onto_a_broker_that_joined_later_loses_no_acknowledged_record(cluster, admin):
    _create(admin, "moving", {0: [1, 2], 1: [2, 1]})
    producing = _Producing(_bootstrap(cluster), "moving")
    wait_until(lambda: len(producing.acknowledged) > 50, "records acknowledged before the move")
    cluster.start(4)
    target = {0: [4, 3], 1: [4, 1]}
    results = wait_until(lambda: admin.alter_partition_reassignments(
        {TopicPartition("moving", p): r for p, r in target.items()}), "the move accepted")
    assert results == {TopicPartition("moving", 0): None, TopicPartition("moving", 1): None}
    wait_until(lambda: _moved(admin, cluster, "moving", target), "the move to complete")
    before_stop = len(producing.acknowledged)
    wait_until(lambda: len(producing.acknowledged) > before_stop + 50, "records after the move")
    acknowledged = producing.stop()
    assert _read_all(_bootstrap(cluster), "moving", 2, acknowledged) >= acknowledged
    # The replicas that left are deleted; the stored assignment has no move under way.
    wait_until(lambda: _log_dir_gone(cluster.brokers[2], "moving", 0)
           and _log_dir_gone(cluster.brokers[1], "moving", 0)
           and _log_dir_gone(cluster.brokers[2], "moving", 1), "the old replicas deleted")
    stored = _stored(cluster, "moving")
    assert (stored["adding_replicas"], stored["removing_replicas"]) == ({}, {})


def test_a_new_controller_resumes_a_move(cluster, admin):
    controller = cluster.controller()[0]
    adding, staying = [b for b in sorted(cluster.brokers) if b != controller][:2]
    _create(admin, "resumed", {0: [staying, controller]})
    wait_until(lambda: _leader(cluster, "resumed") >= 0, "a leader")
    with _paused(cluster.brokers[adding]):
        assert admin.alter_partition_reassignments(
            {TopicPartition("resumed", 0): [adding, staying]}) == {
                TopicPartition("resumed", 0): None}
        stored = _stored(cluster, "resumed")
        assert stored["version"] == 3 and "topic_id" in stored  # Kafka 2.8+'s layout
        assert stored["adding_replicas"] == {"0": [adding]}
        assert stored["removing_replicas"] == {"0": [controller]}
        assert cluster.brokers.pop(controller).terminate() == 0
        wait_until(lambda: cluster.controller()[0] != controller, "another controller")
        # Not through the paused broker: a client bootstrapping from it would wait out its
        # request timeout there first.
        after = KafkaAdminClient(bootstrap_servers=cluster.brokers[staying].bootstrap_servers,
                                 request_timeout_ms=20_000)
        # The new controller read the move from the assignment node.
        assert wait_until(after.list_partition_reassignments, "the move listed") == {
            TopicPartition("resumed", 0): {
                "replicas": [adding, staying, controller], "adding_replicas": [adding],
                "removing_replicas": [controller]}}
    try:
        wait_until(lambda: _moved(after, cluster, "resumed", {0: [adding, staying]}),
               "the resumed move to complete")
    finally:
        after.close()
        cluster.start(controller)


def test_a_cancelled_move_goes_back_to_the_original_replicas(cluster, admin):
    controller = cluster.controller()[0]
    adding = next(b for b in sorted(cluster.brokers) if b != controller)
    first, second = [b for b in sorted(cluster.brokers) if b != adding][:2]
    _create(admin, "cancelled", {0: [first, second]})
    wait_until(lambda: _leader(cluster, "cancelled") >= 0, "a leader")
    partition = TopicPartition("cancelled", 0)
    with _paused(cluster.brokers[adding]):
        assert admin.alter_partition_reassignments({partition: [adding, second]}) == {
            partition: None}
        assert admin.list_partition_reassignments([partition]) == {partition: {
            "replicas": [adding, second, first], "adding_replicas": [adding],
            "removing_replicas": [first]}}
        assert admin.alter_partition_reassignments({partition: None}) == {partition: None}
        assert admin.list_partition_reassignments([partition]) == {}
        assert _replicas(cluster, "cancelled") == {0: [first, second]}


def test_bad_targets_get_kafkas_errors(cluster, admin):
    _create(admin, "refused", {0: [1, 2]})
    key = TopicPartition("refused", 0)
    assert admin.alter_partition_reassignments({key: [1, 99]}) == {
        key: InvalidReplicationAssignmentError}
    assert admin.alter_partition_reassignments({key: [1, 1]}) == {
        key: InvalidReplicationAssignmentError}
    assert admin.alter_partition_reassignments({key: None}) == {
        key: NoReassignmentInProgressError}
    missing = TopicPartition("refused", 7)
    assert admin.alter_partition_reassignments({missing: [1, 2]}) == {
        missing: UnknownTopicOrPartitionError}
    assert _replicas(cluster, "refused") == {0: [1, 2]}


