"""Replication across three ``kafkalite-server`` processes over a real ZooKeeper:
RF=3, min.insync.replicas=2, idempotent acks=all producers. Killing the leader mid-stream
and bringing it back loses no acknowledged record, duplicates none, keeps the order, and
leaves the three replica logs byte-identical up to the high watermark. kafka-python and
aiokafka consumers read through a leader change."""

from __future__ import annotations

import asyncio
import functools
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from polling import until

from kafkalite.protocol import ApiKey

SESSION_MS = 6000
BROKERS = (1, 2, 3)


_until = functools.partial(until, tolerate=(OSError, KeyError, AssertionError, IndexError))


class Cluster:
    def __init__(self, root: Path, connect: str, process_type: type, wire: Any) -> None:
        self.root = root
        self.wire = wire
        self.brokers = {b: process_type(root / f"broker-{b}", [
            "--set", f"broker.id={b}", "--set", f"zookeeper.connect={connect}",
            "--set", f"zookeeper.session.timeout.ms={SESSION_MS}",
            "--set", "controlled.shutdown.retry.backoff.ms=200",
            "--set", "replica.fetch.backoff.ms=200",
            "--set", "min.insync.replicas=2", "--set", "default.replication.factor=3"])
            for b in BROKERS}

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers.values() if b.process)

    def partition(self, topic: str) -> dict[str, Any]:
        via = next(b for b in self.brokers.values() if b.process)
        body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        answer = self.wire(via.bootstrap_servers).call(ApiKey.METADATA, 8, body)
        return answer["topics"][0]["partitions"][0]

    def create(self, topic: str) -> None:
        via = next(iter(self.brokers.values()))
        body = {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 3,
                            "assignments": [], "configs": []}],
                "timeout_ms": 5000, "validate_only": False}
        answer = self.wire(via.bootstrap_servers).call(ApiKey.CREATE_TOPICS, 4, body)
        assert answer["topics"][0]["error_code"] == 0, answer
        _until(lambda: len(self.partition(topic)["isr_nodes"]) == 3, "a full ISR")
        # Every broker's own metadata cache must know the topic before a client asks it:
        # a consumer such as kcat's gives up on a partition its first answer lacks.
        body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        for broker in self.brokers.values():
            _until(lambda b=broker: self.wire(b.bootstrap_servers).call(
                ApiKey.METADATA, 8, body)["topics"][0]["partitions"][0]["leader_id"] >= 0,
                f"every broker to know {topic}")

    def segment(self, broker_id: int, topic: str) -> bytes:
        return (self.root / f"broker-{broker_id}" / f"{topic}-0" /
                f"{0:020d}.log").read_bytes()


def _prefix_below(data: bytes, offset: int) -> bytes | None:
    """The whole batches of a v2 segment holding offsets below ``offset``; None if the
    segment does not reach it yet."""
    if offset == 0:
        return b""
    position = 0
    while position + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, position)
        (delta,) = struct.unpack_from(">i", data, position + 23)
        end = position + 12 + length
        if end > len(data):
            return None
        if base + delta >= offset - 1:
            return data[:end]
        position = end
    return None


@pytest.fixture
def cluster(tmp_path: Path, zookeeper: Any, chroot: str, broker_process_type: type,
            wire: Any) -> Iterator[Cluster]:
    started = Cluster(tmp_path, zookeeper.connect + chroot, broker_process_type, wire)
    try:
        for broker in started.brokers.values():
            broker.start()
        yield started
    finally:
        for broker in started.brokers.values():
            broker.kill()


def test_killing_the_leader_mid_stream_loses_and_duplicates_nothing(cluster):
    cluster.create("orders")
    first_leader = cluster.partition("orders")["leader_id"]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "message.timeout.ms": 120000})
    acked: list[bytes] = []
    lock = threading.Lock()

    def done(err: object, msg: Any) -> None:
        if err is None:
            with lock:
                acked.append(msg.value())
    values = [f"order-{i}".encode() for i in range(4000)]
    for i, value in enumerate(values):
        producer.produce("orders", value, on_delivery=done)
        producer.poll(0)
        if i == 1500:
            producer.poll(0.2)
            cluster.brokers[first_leader].kill()
        if i == 3000:  # once its session expired and another broker leads
            _until(lambda: cluster.partition("orders")["leader_id"] not in (-1, first_leader),
                   "a new leader")
            cluster.brokers[first_leader].start()
    assert producer.flush(120) == 0
    assert acked == values  # each acknowledged once, in order

    state = _until(lambda: (p := cluster.partition("orders"))["leader_id"] != first_leader
                   and len(p["isr_nodes"]) == 3 and p, "the old leader back in the ISR")
    assert state["leader_epoch"] > 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "audit",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    read: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(read) < len(values) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read.append(message.value())
    consumer.close()
    assert read == values

    leader_bytes = _until(lambda: _prefix_below(cluster.segment(state["leader_id"], "orders"),
                                                len(values)), "the leader's log")
    for broker_id in BROKERS:
        _until(lambda b=broker_id: _prefix_below(cluster.segment(b, "orders"), len(values))
               == leader_bytes, f"broker {broker_id} byte-identical up to the HW")


def test_kafka_python_and_aiokafka_consumers_read_through_a_leader_change(cluster):
    from kafka import KafkaConsumer

    cluster.create("events")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    values = [f"e{i}".encode() for i in range(400)]
    for value in values[:200]:
        producer.produce("events", value)
    assert producer.flush(30) == 0
    consumer = KafkaConsumer("events", bootstrap_servers=cluster.bootstrap,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=1000)
    read = []
    deadline = time.monotonic() + 30
    while len(read) < 200 and time.monotonic() < deadline:
        read.extend(record.value for record in consumer)
    leader = cluster.partition("events")["leader_id"]
    cluster.brokers[leader].kill()
    _until(lambda: cluster.partition("events")["leader_id"] not in (-1, leader), "new leader")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    for value in values[200:]:
        producer.produce("events", value)
    assert producer.flush(60) == 0
    deadline = time.monotonic() + 60
    while len(read) < 400 and time.monotonic() < deadline:
        read.extend(record.value for record in consumer)
    consumer.close()
    assert read == values

    async def with_aiokafka() -> list[bytes]:
        from aiokafka import AIOKafkaConsumer

        reader = AIOKafkaConsumer("events", bootstrap_servers=cluster.bootstrap,
                                  auto_offset_reset="earliest", enable_auto_commit=False)
        await reader.start()
        got: list[bytes] = []
        try:
            while len(got) < 400:
                batch = await asyncio.wait_for(reader.getmany(timeout_ms=1000), 60)
                for records in batch.values():
                    got.extend(r.value for r in records)
        finally:
            await reader.stop()
        return got
    assert asyncio.run(with_aiokafka()) == values
