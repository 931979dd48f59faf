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

Then the rebalance a fourth member causes in a group of three, on a 12-partition topic,
under the classic protocol (eager, librdkafka's range assignor) and under KIP-848
(``group.protocol=consumer``, the broker's uniform assignor), both with confluent-kafka: the
clock runs from creating the fourth consumer until every member owns three partitions.
Members heartbeat every 500 ms under both protocols (``heartbeat.interval.ms``, and the
broker's ``group.consumer.heartbeat.interval.ms``), since that interval is how soon a
member hears of a rebalance in either.

    python -m benchmarks.group_join [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.clients import fill, kafkalite_server
from benchmarks.report import add_write_docs, documented

TOPIC = "join-bench"
JOIN_LIMIT_S = 10.0
REBALANCE_TOPIC, REBALANCE_PARTITIONS, HEARTBEAT_MS = "rebalance-bench", 12, 500
REBALANCE_LIMIT_S = 30.0


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


class Member:
    """A confluent-kafka consumer polled on its own thread, tracking what it owns."""

    def __init__(self, bootstrap: str, group: str, protocol: str) -> None:
        import confluent_kafka

        settings: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                                    "group.protocol": protocol, "log_level": 3}
        if protocol == "classic":
            settings["heartbeat.interval.ms"] = HEARTBEAT_MS
        self.owned: set[int] = set()
        self._consumer = confluent_kafka.Consumer(settings)
        self._consumer.subscribe([REBALANCE_TOPIC], on_assign=self._assigned,
                                 on_revoke=self._revoked)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _assigned(self, _consumer: Any, partitions: list[Any]) -> None:
        self.owned |= {tp.partition for tp in partitions}

    def _revoked(self, _consumer: Any, partitions: list[Any]) -> None:
        self.owned -= {tp.partition for tp in partitions}

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.05)
        self._consumer.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _balanced(members: list[Member], each: int) -> bool:
    return all(len(m.owned) == each for m in members) and \
        len(set().union(*(m.owned for m in members))) == REBALANCE_PARTITIONS


def _wait(members: list[Member], each: int) -> None:
    deadline = time.perf_counter() + REBALANCE_LIMIT_S
    while not _balanced(members, each):
        if time.perf_counter() > deadline:
            raise Stuck
        time.sleep(0.005)


def fourth_member_rebalance(bootstrap: str, protocol: str) -> float:
    """Seconds from creating a fourth member until each of the four owns its share."""
    group = f"rebalance-{protocol}-{uuid.uuid4().hex}"
    members = [Member(bootstrap, group, protocol) for _ in range(3)]
    try:
        _wait(members, REBALANCE_PARTITIONS // 3)
        start = time.perf_counter()
        members.append(Member(bootstrap, group, protocol))
        _wait(members, REBALANCE_PARTITIONS // 4)
        return time.perf_counter() - start
    finally:
        for member in members:
            member.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.group_join", args.write_docs):
        seconds: dict[str, list[float]] = {name: [] for name in CLIENTS}
        stuck: dict[str, int] = dict.fromkeys(CLIENTS, 0)
        rebalances: dict[str, list[float]] = {"classic": [], "consumer": []}
        with kafkalite_server({"group.initial.rebalance.delay.ms": "0",
                               "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
                               "num.partitions": str(REBALANCE_PARTITIONS)}) as bootstrap:
            fill(bootstrap, TOPIC, 1000)
            for _ in range(args.rounds):
                for name, join in CLIENTS.items():
                    try:
                        seconds[name].append(join(bootstrap))
                    except Stuck:
                        stuck[name] += 1
            fill(bootstrap, REBALANCE_TOPIC, 1)  # creates it with num.partitions
            for _ in range(args.rounds):
                for protocol, runs in rebalances.items():
                    try:
                        runs.append(fourth_member_rebalance(bootstrap, protocol))
                    except Stuck:
                        stuck.setdefault(protocol, 0)
                        stuck[protocol] += 1
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
        print(f"a fourth member joins three (confluent-kafka, {REBALANCE_PARTITIONS} "
              f"partitions, heartbeats every {HEARTBEAT_MS} ms), until each owns its share, "
              f"median of {args.rounds} rounds")
        for protocol, runs in rebalances.items():
            label = "classic (eager)" if protocol == "classic" else "consumer (KIP-848)"
            note = f"  stuck in {stuck[protocol]} rounds" if stuck.get(protocol) else ""
            if runs:
                print(f"  {label:20s} median {statistics.median(runs):6.3f} s  "
                      f"(min {min(runs):.3f}, max {max(runs):.3f}){note}")
            else:
                print(f"  {label:20s} no round balanced{note}")


if __name__ == "__main__":
    main()
