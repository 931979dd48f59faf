"""Consumer groups of real clients (librdkafka, kafka-python, aiokafka) against the broker."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import pytest
from confluent_kafka import Consumer as RdKafkaConsumer
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from kafkalite_server import EmbeddedCluster

pytestmark = pytest.mark.compat

SESSION_MS = 6000
Received = tuple[int, bytes]  # (partition, value)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> set[Received]:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    sent = set()
    for partition in range(partitions):
        for i in range(per_partition):
            value = f"{topic}-{partition}-{i}".encode()
            producer.send(topic, value, partition=partition)
            sent.add((partition, value))
    producer.flush()
    producer.close()
    return sent


class Member(Protocol):
    received: list[Received]

    def poll(self) -> None: ...
    def partitions(self) -> set[int]: ...
    def close(self) -> None: ...


class RdKafkaMember:
    def __init__(self, bootstrap: str, group: str, topic: str, **config: object) -> None:
        self.consumer = RdKafkaConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": SESSION_MS,
                "heartbeat.interval.ms": 500,
                **config,
            }
        )
        self.consumer.subscribe([topic])
        self.received: list[Received] = []

    def poll(self) -> None:
        message = self.consumer.poll(0.05)
        if message is not None and message.error() is None:
            self.received.append((message.partition(), message.value()))

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonMember:
    def __init__(self, bootstrap: str, group: str, topic: str, **config: object) -> None:
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=500,
            **config,
        )
        # Metadata first: kafka-python 3.0.12 joining before it knows the topic assigns
        # nothing, rejoins at once, and now and then never processes that second SyncGroup.
        self.consumer.topics()
        self.consumer.subscribe([topic])
        self.received: list[Received] = []

    def poll(self) -> None:
        for records in self.consumer.poll(timeout_ms=50).values():
            self.received.extend((r.partition, r.value) for r in records)

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


def poll_until(members: list[Member], done: Callable[[], bool], timeout: float = 45.0) -> None:
    """Poll every member concurrently, one thread each, round after round, until ``done``.

    A member's poll may block while the coordinator holds its JoinGroup until the others
    rejoin (as Kafka does); polling the members one after another from one thread would then
    stall the others until a request timeout. Rounds keep each consumer on one thread at a
    time, and ``done`` runs between rounds.
    """
    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(max_workers=len(members)) as pool:
        while not done():
            assert time.monotonic() < deadline, [sorted(m.partitions()) for m in members]
            for future in [pool.submit(member.poll) for member in members]:
                future.result()


def balanced(members: list[Member], partitions: int) -> Callable[[], bool]:
    """Every member owns its share and together they own each partition exactly once."""

    def check() -> bool:
        owned = [m.partitions() for m in members]
        counts = Counter(p for parts in owned for p in parts)
        share = partitions // len(members)
        return (
            sorted(counts) == list(range(partitions))
            and all(len(parts) == share for parts in owned)
            and set(counts.values()) == {1}
        )

    return check


def assert_read_exactly_once(members: list[Member], sent: set[Received]) -> None:
    everything = [record for m in members for record in m.received]
    assert len(everything) == len(sent)
    assert set(everything) == sent
    for member in members:
        assert {partition for partition, _ in member.received} <= member.partitions()


def consume_in_group(members: list[Member], bootstrap: str, topic: str, partitions: int) -> None:
    """Wait for a balanced assignment, then produce and check each record is read once."""
    try:
        poll_until(members, balanced(members, partitions))
        sent = produce(bootstrap, topic, partitions, per_partition=5)
        poll_until(members, lambda: sum(len(m.received) for m in members) >= len(sent))
        assert_read_exactly_once(members, sent)
    finally:
        for member in members:
            member.close()


@pytest.fixture
def bootstrap(cluster: EmbeddedCluster) -> str:
    return cluster.bootstrap_servers


def test_three_librdkafka_consumers_share_six_partitions(bootstrap: str) -> None:
    create_topic(bootstrap, "six", 6)
    members: list[Member] = [RdKafkaMember(bootstrap, "rd-group", "six") for _ in range(3)]
    consume_in_group(members, bootstrap, "six", 6)


def test_leaving_member_is_replaced_by_a_rebalance(bootstrap: str) -> None:
    create_topic(bootstrap, "leave", 4)
    stays = RdKafkaMember(bootstrap, "leave-group", "leave")
    leaves = RdKafkaMember(bootstrap, "leave-group", "leave")
    try:
        poll_until([stays, leaves], balanced([stays, leaves], 4))
        leaves.close()  # sends LeaveGroup
        poll_until([stays], lambda: stays.partitions() == {0, 1, 2, 3}, timeout=SESSION_MS / 1000)
    finally:
        stays.close()


KILLABLE_MEMBER = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                         "session.timeout.ms": int(sys.argv[4]), "heartbeat.interval.ms": 500})
    consumer.subscribe([sys.argv[3]])
    announced = False
    while True:
        consumer.poll(0.05)
        if consumer.assignment() and not announced:
            print("assigned", flush=True)
            announced = True
    """
)


def test_killed_member_is_expelled_after_its_session_timeout(bootstrap: str) -> None:
    create_topic(bootstrap, "kill", 4)
    survivor = RdKafkaMember(bootstrap, "kill-group", "kill")
    victim = subprocess.Popen(
        [sys.executable, "-c", KILLABLE_MEMBER, bootstrap, "kill-group", "kill", str(SESSION_MS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        poll_until([survivor], lambda: len(survivor.partitions()) == 2)
        assert victim.stdout is not None and victim.stdout.readline().strip() == "assigned"
        victim.kill()  # SIGKILL: no LeaveGroup, only the session timeout can notice
        victim.wait()
        poll_until([survivor], lambda: survivor.partitions() == {0, 1, 2, 3})
    finally:
        victim.kill()
        victim.wait()
        survivor.close()


@pytest.mark.parametrize("assignor", [RangePartitionAssignor, RoundRobinPartitionAssignor])
def test_kafka_python_group(bootstrap: str, assignor: type) -> None:
    create_topic(bootstrap, "kp", 4)
    members: list[Member] = [
        KafkaPythonMember(
            bootstrap, f"kp-{assignor.name}", "kp", partition_assignment_strategy=[assignor]
        )
        for _ in range(2)
    ]
    consume_in_group(members, bootstrap, "kp", 4)


def test_mixed_librdkafka_and_kafka_python_group(bootstrap: str) -> None:
    create_topic(bootstrap, "mixed", 4)
    members: list[Member] = [
        RdKafkaMember(
            bootstrap, "mixed-group", "mixed", **{"partition.assignment.strategy": "range"}
        ),
        KafkaPythonMember(
            bootstrap,
            "mixed-group",
            "mixed",
            partition_assignment_strategy=[RangePartitionAssignor],
        ),
    ]
    consume_in_group(members, bootstrap, "mixed", 4)


def test_aiokafka_group(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer

    create_topic(bootstrap, "aio", 4)

    async def run() -> None:
        consumers = [
            AIOKafkaConsumer(
                "aio",
                bootstrap_servers=bootstrap,
                group_id="aio-group",
                auto_offset_reset="earliest",
                session_timeout_ms=SESSION_MS,
                heartbeat_interval_ms=500,
            )
            for _ in range(2)
        ]
        for consumer in consumers:
            await consumer.start()
        try:
            deadline = time.monotonic() + 45
            while [len(c.assignment()) for c in consumers] != [2, 2]:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            sent = produce(bootstrap, "aio", 4, per_partition=5)
            received: list[list[Received]] = [[], []]
            while sum(map(len, received)) < len(sent):
                assert time.monotonic() < deadline
                for consumer, sink in zip(consumers, received, strict=True):
                    batches = await consumer.getmany(timeout_ms=100)
                    sink.extend((r.partition, r.value) for rs in batches.values() for r in rs)
            assert Counter(r for sink in received for r in sink) == Counter(sent)
            for consumer, sink in zip(consumers, received, strict=True):
                assert {p for p, _ in sink} <= {tp.partition for tp in consumer.assignment()}
        finally:
            for consumer in consumers:
                await consumer.stop()

    asyncio.run(run())
