"""How long a new group member takes to get its first records: kafkalite, kafka-python and
confluent-kafka in the same run, against one kafkalite-server.

Each round, each client subscribes to a filled one-partition topic under a fresh group id and
polls until it has records; the clock runs from creating the consumer (after its imports) to
the first non-empty poll, so it holds bootstrap, FindCoordinator, JoinGroup, SyncGroup,
OffsetFetch, ListOffsets and the first Fetch. The broker runs with
``group.initial.rebalance.delay.ms=0``: Kafka's 3 s default delay would be most of every
figure and the same for every client.

Every wait is bounded (``JOIN_LIMIT_S``): a member that has no records by then counts as a
stuck round, printed with the client's figures and left out of its median. kafka-python
3.0.12 sometimes gets stuck for good: its leader assigns before its metadata holds the
topic ("No partition metadata for topic"), hands itself nothing and never rejoins.

    python -m benchmarks.group_join [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable

from benchmarks.clients import fill, kafkalite_server
from benchmarks.report import add_write_docs, documented

TOPIC = "join-bench"
JOIN_LIMIT_S = 10.0


class Stuck(Exception):
    """A member still had no records after ``JOIN_LIMIT_S``."""


def _check_limit(start: float) -> None:
    if time.perf_counter() - start > JOIN_LIMIT_S:
        raise Stuck


def join_kafkalite(bootstrap: str) -> float:
    from kafkalite import Consumer

    start = time.perf_counter()
    with Consumer(TOPIC, bootstrap_servers=bootstrap, group_id=f"join-{uuid.uuid4().hex}",
                  auto_offset_reset="earliest") as consumer:
        while not consumer.poll(timeout_ms=100):
            _check_limit(start)
        return time.perf_counter() - start


def join_kafka_python(bootstrap: str) -> float:
    from kafka import KafkaConsumer

    start = time.perf_counter()
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap,
                             group_id=f"join-{uuid.uuid4().hex}", auto_offset_reset="earliest")
    try:
        while not consumer.poll(timeout_ms=100):
            _check_limit(start)
        return time.perf_counter() - start
    finally:
        consumer.close()


def join_confluent(bootstrap: str) -> float:
    import confluent_kafka

    start = time.perf_counter()
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"join-{uuid.uuid4().hex}",
        "auto.offset.reset": "earliest", "log_level": 3})
    try:
        consumer.subscribe([TOPIC])
        while True:
            message = consumer.poll(0.1)
            if message is not None and not message.error():
                return time.perf_counter() - start
            _check_limit(start)
    finally:
        consumer.close()


CLIENTS: dict[str, Callable[[str], float]] = {
    "kafkalite": join_kafkalite,
    "kafka-python": join_kafka_python,
    "confluent-kafka": join_confluent,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.group_join", args.write_docs):
        seconds: dict[str, list[float]] = {name: [] for name in CLIENTS}
        stuck: dict[str, int] = dict.fromkeys(CLIENTS, 0)
        with kafkalite_server({"group.initial.rebalance.delay.ms": "0"}) as bootstrap:
            fill(bootstrap, TOPIC, 1000)
            for _ in range(args.rounds):
                for name, join in CLIENTS.items():
                    try:
                        seconds[name].append(join(bootstrap))
                    except Stuck:
                        stuck[name] += 1
        print(f"first records after subscribe, median of {args.rounds} rounds "
              "(group.initial.rebalance.delay.ms=0)")
        ours = statistics.median(seconds["kafkalite"]) if seconds["kafkalite"] else None
        for name, runs in seconds.items():
            note = f"  stuck in {stuck[name]} of {args.rounds} rounds (no records in " \
                f"{JOIN_LIMIT_S:.0f} s)" if stuck[name] else ""
            if not runs:
                print(f"  {name:16s} no round got records{note}")
                continue
            median = statistics.median(runs)
            against = "" if ours is None else f"  {median - ours:+.3f} s against kafkalite"
            print(f"  {name:16s} median {median:6.3f} s  (min {min(runs):.3f}, "
                  f"max {max(runs):.3f}){against}{note}")


if __name__ == "__main__":
    main()
