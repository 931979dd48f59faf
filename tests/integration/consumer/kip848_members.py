"""librdkafka consumers for the KIP-848 tests: each polled on its own thread, committing
every record it reads before the next, and a producer of numbered records."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafkalite_server import EmbeddedCluster


class Member:
    """One librdkafka consumer polled on its own thread; it commits each record it reads
    before reading the next, and records its rebalance callbacks."""

    def __init__(self, cluster: EmbeddedCluster, name: str, seen: Counter[bytes],
                 lock: threading.Lock, *, topic: str, group: str,
                 protocol: str = "consumer", **config: object) -> None:
        self.name = name
        self.owned: set[int] = set()
        self.revoked: list[set[int]] = []
        self.errors: list[KafkaException] = []
        self._seen, self._lock = seen, lock
        self._stop = threading.Event()
        self._consumer = Consumer({
            "bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
            "group.protocol": protocol, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "client.id": name, **config})
        self._consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)
        self._thread = threading.Thread(target=self._run, name=name)
        self._thread.start()

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.owned |= {tp.partition for tp in partitions}

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.revoked.append({tp.partition for tp in partitions})
        self.owned -= {tp.partition for tp in partitions}

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self._consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            with self._lock:
                self._seen[message.value()] += 1
            self._commit(message)
        self._consumer.close()  # leaves the group: its partitions move at once

    def _commit(self, message: Any) -> None:
        """Commits, again while the commit races a rebalance (STALE_MEMBER_EPOCH: the
        member epoch moved on between the heartbeat and the commit)."""
        deadline = time.monotonic() + 30
        while True:
            try:
                self._consumer.commit(message=message, asynchronous=False)
                return
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    self.errors.append(exc)
                    return
                time.sleep(0.1)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


def produce(cluster: EmbeddedCluster, start: int, count: int, topic: str,
            partitions: int = 6) -> list[bytes]:
    # idempotent: a retried produce must not put a record in the log twice, since the
    # test counts how often each record is read
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5,
                         "enable.idempotence": True})
    values = [f"record-{i}".encode() for i in range(start, start + count)]
    for index, value in enumerate(values):
        producer.produce(topic, value, partition=index % partitions)
    assert producer.flush(30) == 0
    return values
