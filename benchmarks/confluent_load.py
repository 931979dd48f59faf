"""The produce loop of the broker-side benchmarks: confluent-kafka (librdkafka) as the load,
written once so that every benchmark loads a broker the same way."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any


def produce_all(producer: Any, topic: str, values: Sequence[bytes], count: int,
                partition: int = 0, flush_timeout: float = 600.0) -> float:
    """Seconds from the first send of ``count`` records (``values`` taken in turn) to the
    last acknowledgement. A full local queue is drained by polling, never by dropping a
    record; anything still unsent after ``flush_timeout`` raises, so a figure always counts
    delivered records only."""
    start = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, values[i % len(values)], partition=partition)
                break
            except BufferError:
                producer.poll(0.005)
    remaining = producer.flush(flush_timeout)
    elapsed = time.perf_counter() - start
    if remaining:
        raise RuntimeError(f"{topic}: {remaining} records left unsent")
    return elapsed
