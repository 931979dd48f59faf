"""Our Consumer with real peers: a group shared with librdkafka members on our broker, and a
group of our consumers against librdkafka's mock cluster (an independent broker)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import confluent_kafka
import pytest

from kafkalite import Consumer
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster
from tests.integration.consumer.helpers import produce

pytestmark = pytest.mark.compat

SESSION_MS = 6000


def kafkalite_member(bootstrap: str, group: str, topic: str) -> Consumer:
    return Consumer(topic, bootstrap_servers=bootstrap, group_id=group,
                    auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
                    heartbeat_interval_ms=300, max_poll_records=5)


def rdkafka_member(bootstrap: str, group: str, topic: str) -> confluent_kafka.Consumer:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 300,
        "partition.assignment.strategy": "range", "log_level": 3})
    consumer.subscribe([topic])
    return consumer


def run_group(ours: list[Consumer], theirs: list[confluent_kafka.Consumer],
              done: Callable[[Counter[tuple[int, bytes]]], bool],
              timeout: float = 45.0) -> Counter[tuple[int, bytes]]:
    """Poll every member in turn until ``done(read)``; read = (partition, value) counts."""
    read: Counter[tuple[int, bytes]] = Counter()
    deadline = time.monotonic() + timeout
    while not done(read):
        assert time.monotonic() < deadline, f"group did not settle; read {sum(read.values())}"
        for member in ours:
            for records in member.poll(timeout_ms=20).values():
                read.update((r.partition, r.value) for r in records)
        for peer in theirs:
            message = peer.poll(0.02)
            if message is not None and not message.error():
                read[(message.partition(), message.value())] += 1
    return read


@pytest.fixture
def bootstrap(cluster_factory: Callable[..., EmbeddedCluster]) -> str:
    return cluster_factory(num_partitions="6").bootstrap_servers


def test_mixed_group_with_librdkafka_members(bootstrap: str) -> None:
    sent = produce(bootstrap, "mixed", 6, 10)
    ours = [kafkalite_member(bootstrap, "mixed-group", "mixed") for _ in range(2)]
    theirs = [rdkafka_member(bootstrap, "mixed-group", "mixed")]
    try:
        def settled(read: Counter[tuple[int, bytes]]) -> bool:
            return (sum(read.values()) >= len(sent)
                    and all(len(m.assignment()) == 2 for m in ours)
                    and len(theirs[0].assignment()) == 2)

        read = run_group(ours, theirs, settled)
        assert set(read) == sent
        assert max(read.values()) == 1
        owned = [m.assignment() for m in ours] + [
            {TopicPartition(tp.topic, tp.partition) for tp in theirs[0].assignment()}]
        assert set().union(*owned) == {TopicPartition("mixed", p) for p in range(6)}
    finally:
        for member in ours:
            member.close()
        for peer in theirs:
            peer.close()


def produce_to_mock(bootstrap: str, prefix: str) -> set[tuple[int, bytes]]:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    sent = set()
    for partition in range(4):
        for i in range(5):
            value = f"{prefix}-{partition}-{i}".encode()
            producer.produce("mocked", value, partition=partition)
            sent.add((partition, value))
    assert producer.flush(10) == 0
    return sent


def test_group_on_librdkafka_mock_cluster(mock_cluster: str) -> None:
    """The mock auto-creates topics with four partitions. Its coordinator refuses commits
    while a rebalance is being prepared (Kafka accepts them), so records read before the
    group settles may be read twice; once settled, every record is read exactly once."""
    early = produce_to_mock(mock_cluster, "early")
    ours = [kafkalite_member(mock_cluster, "mock-group", "mocked") for _ in range(2)]
    try:
        read = run_group(ours, [], lambda read: set(read) >= early
                         and all(len(m.assignment()) == 2 for m in ours))
        late = produce_to_mock(mock_cluster, "late")
        read = run_group(ours, [], lambda read: sum(read.values()) >= len(late))
        assert set(read) == late and max(read.values()) == 1
        for member in ours:
            member.commit()
        tp = TopicPartition("mocked", 0)
        owner = next(m for m in ours if tp in m.assignment())
        assert owner.committed(tp) == 10
    finally:
        for member in ours:
            member.close()
