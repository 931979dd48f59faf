"""Shared steps for consumer integration tests: produce, poll several members until a
condition holds, collect what they read."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kafkalite import Producer
from kafkalite.consumer import Consumer
from kafkalite.structs import ConsumerRecord

Read = tuple[int, bytes]  # (partition, value)


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int,
            prefix: str = "") -> set[Read]:
    sent = set()
    with Producer(bootstrap, linger_ms=0) as producer:
        for partition in range(partitions):
            for i in range(per_partition):
                value = f"{prefix}{topic}-{partition}-{i}".encode()
                producer.send(topic, value, partition=partition)
                sent.add((partition, value))
        producer.flush(30)
    return sent


def poll_until(members: Iterable[Consumer], done: Callable[[], bool], *,
               timeout: float = 30.0, sink: list[ConsumerRecord] | None = None) -> None:
    """Poll every member in turn (short polls, so joins interleave) until ``done()``."""
    members = list(members)
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time; assignments: "
                                 f"{[sorted(m.assignment()) for m in members]}")
        for member in members:
            for records in member.poll(timeout_ms=20).values():
                if sink is not None:
                    sink.extend(records)
