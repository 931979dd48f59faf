"""Unmodified peer clients (kcat, confluent-kafka, kafka-python, aiokafka) produce and
consume through a leader change on three ``kafkalite-server`` processes over a real
ZooKeeper: RF=3, min.insync.replicas=2, acks=all.

Each client writes records, reads them with a consumer that stays open, then the
partition's leader is SIGKILLed. Once the controller has elected another leader, the same
producer (a new process for kcat, whose producer exits after each batch) writes more
records, and the same consumer reads them: every record from before and after the change
comes back, in order, once. A fresh consumer then reads the whole partition from the start.
"""

from __future__ import annotations

import asyncio
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import pytest
from test_replication_processes import (
    Cluster,
    _until,
    cluster,  # noqa: F401  (the three-broker fixture)
)

READ_TIMEOUT_S = 60.0
"""Bounds every loop that waits for records; not a speed check."""


class PeerClient(Protocol):
    def produce(self, values: list[bytes]) -> None:
        """Writes ``values`` to partition 0 and returns once all are acknowledged."""

    def read(self, count: int) -> list[bytes]:
        """The next ``count`` values of the open consumer (fewer if the bound runs out)."""

    def read_all(self, count: int) -> list[bytes]:
        """``count`` values read from the start by a fresh consumer."""

    def close(self) -> None: ...


def _collect(count: int, poll: Callable[[], list[bytes]]) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + READ_TIMEOUT_S
    while len(got) < count and time.monotonic() < deadline:
        got.extend(poll())
    return got


class Kcat:
    def __init__(self, servers: str, topic: str) -> None:
        self.servers = servers
        self.topic = topic
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.consumer = self._consume(["-o", "beginning"])
        threading.Thread(target=self._drain, daemon=True).start()

    def _consume(self, extra: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["kcat", "-b", self.servers, "-C", "-t", self.topic,
                                 "-p", "0", "-f", "%s\n", "-q", "-u", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def _drain(self) -> None:
        assert self.consumer.stdout is not None
        for line in self.consumer.stdout:
            self.lines.put(line.rstrip(b"\n"))

    def produce(self, values: list[bytes]) -> None:
        subprocess.run(["kcat", "-b", self.servers, "-P", "-t", self.topic, "-p", "0",
                        "-X", "acks=all", "-X", "enable.idempotence=true"],
                       input=b"".join(v + b"\n" for v in values), check=True,
                       capture_output=True, timeout=READ_TIMEOUT_S)

    def read(self, count: int) -> list[bytes]:
        def poll() -> list[bytes]:
            try:
                return [self.lines.get(timeout=0.5)]
            except queue.Empty:
                return []
        return _collect(count, poll)

    def read_all(self, count: int) -> list[bytes]:
        output = subprocess.run(["kcat", "-b", self.servers, "-C", "-t", self.topic, "-p", "0",
                                 "-o", "beginning", "-c", str(count), "-e", "-q",
                                 "-f", "%s\n"], capture_output=True, check=True,
                                timeout=READ_TIMEOUT_S).stdout
        return output.splitlines()

    def close(self) -> None:
        self.consumer.kill()
        self.consumer.wait()


class Confluent:
    def __init__(self, servers: str, topic: str) -> None:
        from confluent_kafka import Producer
        self.servers = servers
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": servers, "acks": "all",
                                  "enable.idempotence": True})
        self.consumer = self._consumer()

    def _consumer(self) -> Any:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        consumer = Consumer({"bootstrap.servers": self.servers, "group.id": "peers",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        return consumer

    def produce(self, values: list[bytes]) -> None:
        failures: list[Any] = []
        for value in values:
            self.producer.produce(self.topic, value, partition=0,
                                  on_delivery=lambda err, _msg: err and failures.append(err))
        assert self.producer.flush(READ_TIMEOUT_S) == 0
        assert failures == []

    @staticmethod
    def _poll(consumer: Any) -> Callable[[], list[bytes]]:
        def poll() -> list[bytes]:
            message = consumer.poll(0.5)
            return [message.value()] if message is not None and not message.error() else []
        return poll

    def read(self, count: int) -> list[bytes]:
        return _collect(count, self._poll(self.consumer))

    def read_all(self, count: int) -> list[bytes]:
        fresh = self._consumer()
        try:
            return _collect(count, self._poll(fresh))
        finally:
            fresh.close()

    def close(self) -> None:
        self.consumer.close()


class KafkaPython:
    def __init__(self, servers: str, topic: str) -> None:
        from kafka import KafkaProducer
        self.servers = servers
        self.topic = topic
        self.producer = KafkaProducer(bootstrap_servers=servers, acks="all",
                                      enable_idempotence=True)
        self.consumer = self._consumer()

    def _consumer(self) -> Any:
        from kafka import KafkaConsumer, TopicPartition
        consumer = KafkaConsumer(bootstrap_servers=self.servers,
                                 auto_offset_reset="earliest", enable_auto_commit=False)
        consumer.assign([TopicPartition(self.topic, 0)])
        return consumer

    def produce(self, values: list[bytes]) -> None:
        futures = [self.producer.send(self.topic, value, partition=0) for value in values]
        self.producer.flush(READ_TIMEOUT_S)
        for future in futures:
            future.get(timeout=READ_TIMEOUT_S)

    @staticmethod
    def _poll(consumer: Any) -> Callable[[], list[bytes]]:
        def poll() -> list[bytes]:
            batches = consumer.poll(timeout_ms=500)
            return [record.value for records in batches.values() for record in records]
        return poll

    def read(self, count: int) -> list[bytes]:
        return _collect(count, self._poll(self.consumer))

    def read_all(self, count: int) -> list[bytes]:
        fresh = self._consumer()
        try:
            return _collect(count, self._poll(fresh))
        finally:
            fresh.close()

    def close(self) -> None:
        self.consumer.close()
        self.producer.close(timeout=10)


class AioKafka:
    """aiokafka's clients live on one event loop that each call runs until done."""

    def __init__(self, servers: str, topic: str) -> None:
        from aiokafka import AIOKafkaProducer
        self.servers = servers
        self.topic = topic
        self.loop = asyncio.new_event_loop()

        async def start_producer() -> AIOKafkaProducer:
            producer = AIOKafkaProducer(bootstrap_servers=servers, acks="all",
                                        enable_idempotence=True)
            await producer.start()
            return producer
        self.producer = self.loop.run_until_complete(start_producer())
        self.consumer = self.loop.run_until_complete(self._consumer())

    async def _consumer(self) -> Any:
        from aiokafka import AIOKafkaConsumer, TopicPartition
        consumer = AIOKafkaConsumer(bootstrap_servers=self.servers,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        consumer.assign([TopicPartition(self.topic, 0)])
        return consumer

    def produce(self, values: list[bytes]) -> None:
        async def send() -> None:
            sent = [await self.producer.send(self.topic, value, partition=0)
                    for value in values]
            await asyncio.wait_for(asyncio.gather(*sent), READ_TIMEOUT_S)
        self.loop.run_until_complete(send())

    def _poll(self, consumer: Any) -> Callable[[], list[bytes]]:
        def poll() -> list[bytes]:
            batches = self.loop.run_until_complete(consumer.getmany(timeout_ms=500))
            return [record.value for records in batches.values() for record in records]
        return poll

    def read(self, count: int) -> list[bytes]:
        return _collect(count, self._poll(self.consumer))

    def read_all(self, count: int) -> list[bytes]:
        fresh = self.loop.run_until_complete(self._consumer())
        try:
            return _collect(count, self._poll(fresh))
        finally:
            self.loop.run_until_complete(fresh.stop())

    def close(self) -> None:
        self.loop.run_until_complete(self.consumer.stop())
        self.loop.run_until_complete(self.producer.stop())
        self.loop.close()


CLIENTS: dict[str, Callable[[str, str], PeerClient]] = {
    "kcat": Kcat, "confluent-kafka": Confluent, "kafka-python": KafkaPython,
    "aiokafka": AioKafka}


@pytest.mark.parametrize("name", CLIENTS)
def test_produce_and_consume_through_a_leader_change(cluster: Cluster,  # noqa: F811
                                                     name: str) -> None:
    topic = "through-" + name
    cluster.create(topic)
    before = [f"{name}-before-{i}".encode() for i in range(200)]
    after = [f"{name}-after-{i}".encode() for i in range(200)]
    client = CLIENTS[name](cluster.bootstrap, topic)
    try:
        client.produce(before)
        assert client.read(len(before)) == before

        leader = cluster.partition(topic)["leader_id"]
        cluster.brokers[leader].kill()
        state = _until(lambda: (p := cluster.partition(topic))["leader_id"] not in (-1, leader)
                       and p, "a new leader")
        assert state["leader_epoch"] > 0

        client.produce(after)
        assert client.read(len(after)) == after
        assert client.read_all(len(before) + len(after)) == before + after
    finally:
        client.close()
