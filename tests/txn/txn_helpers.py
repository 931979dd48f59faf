"""Shared helpers of the transaction tests: settings for a small transaction state topic,
and reading a partition to its end at either isolation level."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TXN_SETTINGS = {"transaction_state_log_num_partitions": "3",
                "transaction_abort_timed_out_transaction_cleanup_interval_ms": "200"}


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)


def read_all(bootstrap: str, topic: str, isolation: str, partitions: int = 1,
             timeout: float = 15.0) -> list[bytes]:
    """Every value of ``topic`` up to its end at ``isolation`` level (the LSO for
    read_committed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}",
                         "isolation.level": isolation, "enable.partition.eof": True,
                         "enable.auto.commit": False, "log_level": 3})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(message.partition())
                continue
            values.append(message.value())
    finally:
        consumer.close()
    return values
