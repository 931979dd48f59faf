"""The main job: start a kafkalite cluster in this process and run the toolkit end to end.

``python -m kafkalite.demo`` (or ``tox -e demo``) starts a replicating 3-broker
:class:`EmbeddedCluster` (replication factor 3, ``min.insync.replicas=2``), produces a
clickstream keyed by user through a custom partitioner, consumes it back with a consumer
group, runs the Spark job when PySpark is installed, then kills a broker in the middle of an
acks=all stream and shows that the leaders move, the ISR shrinks, and every acknowledged
record is still there. It prints a short report with timings. Each step says what it did;
the Spark step says so and is skipped when the optional ``spark`` extra is not installed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kafkalite import Consumer, Producer
from kafkalite.admin import AdminClient, NewTopic
from kafkalite.errors import KafkaError
from kafkalite.producer import FutureRecordMetadata
from kafkalite.producer.partitioners import Partitioner, murmur2
from kafkalite.serde import MsgpackSerializer
from kafkalite.structs import TopicPartition

TOPIC = "clickstream"
PARTITIONS = 8
ORDERS = "orders"
ORDER_PARTITIONS = 6
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
PAGES = ("/", "/search", "/product", "/cart", "/checkout", "/help")
ACTIONS = ("view", "click", "scroll", "purchase")


class RegionPartitioner(Partitioner):
    """Keeps each region's users on their own half of the partitions.

    Keys look like ``"eu:user-42"``; EU users land on the lower half, everyone else on the
    upper half, and within a half the user id is hashed with murmur2 so one user's events stay
    in order on one partition. It shows what a user-defined partitioner looks like.
    """

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any,
                  value_bytes: bytes | None, cluster: Any) -> int:
        partitions = sorted(cluster.partitions_for_topic(topic))
        half = len(partitions) // 2 or 1
        region, _, user = (key or "").partition(":")
        base = 0 if region == "eu" else len(partitions) - half
        return partitions[base + (murmur2(user.encode()) & 0x7FFFFFFF) % half]


@dataclass
class Report:
    """What each step did and how long it took, printed at the end."""

    lines: list[tuple[str, float, str]] = field(default_factory=list)

    @contextmanager
    def step(self, name: str) -> Iterator[list[str]]:
        notes: list[str] = []
        print(f"==> {name}", flush=True)
        started = time.perf_counter()
        yield notes
        elapsed = time.perf_counter() - started
        for note in notes:
            print(f"    {note}", flush=True)
        self.lines.append((name, elapsed, "; ".join(notes)))

    def print(self) -> None:
        print("\nkafkalite demo report")
        print("-" * 72)
        for name, elapsed, summary in self.lines:
            print(f"{name:<40} {elapsed:8.2f} s  {summary}")


class Progress:
    """A progress bar on stderr; rich's when it is installed, a plain counter otherwise."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0
        self._last_print = 0.0
        try:
            from rich.progress import Progress as RichProgress
        except ImportError:
            self._rich = None
        else:
            self._rich = RichProgress(transient=True)
            self._rich.start()
            self._task = self._rich.add_task(label, total=total)

    def advance(self, count: int) -> None:
        self.done += count
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done)
            return
        now = time.monotonic()
        if now - self._last_print > 1 or self.done >= self.total:
            self._last_print = now
            print(f"    {self.label}: {self.done:,}/{self.total:,}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()


def clickstream(events: int, users: int, seed: int = 7) -> Iterator[tuple[str, dict[str, Any]]]:
    """Deterministic fake traffic: (key, event) pairs, key = ``region:user``."""
    rng = random.Random(seed)
    start_ms = 1_700_000_000_000
    for i in range(events):
        user = rng.randrange(users)
        region = "eu" if user % 3 == 0 else "us"
        yield f"{region}:user-{user}", {
            "user": f"user-{user}",
            "page": rng.choice(PAGES),
            "action": rng.choice(ACTIONS),
            "ts": start_ms + i,
        }


def produce(bootstrap: str, events: int, users: int, notes: list[str]) -> Counter[int]:
    per_partition: Counter[int] = Counter()
    progress = Progress("producing", events)
    started = time.perf_counter()
    with Producer(bootstrap_servers=bootstrap, partitioner=RegionPartitioner(),
                  key_serializer=str.encode, value_serializer=MsgpackSerializer(),
                  compression_type="lz4", linger_ms=5, acks=1) as producer:
        pending: deque[FutureRecordMetadata] = deque()

        def settle(block: bool) -> None:
            """Tally acknowledged sends from the oldest on; ``get`` raises a failed send."""
            settled = 0
            while pending and (block or pending[0].is_done()):
                per_partition[pending.popleft().get(timeout=60).partition] += 1
                settled += 1
            progress.advance(settled)

        for sent, (key, event) in enumerate(clickstream(events, users), 1):
            pending.append(producer.send(TOPIC, event, key=key))
            if sent % 20_000 == 0:
                settle(block=False)
        producer.flush()
        settle(block=True)
    progress.close()
    elapsed = time.perf_counter() - started
    notes.append(f"{events:,} msgpack events, lz4, RegionPartitioner: "
                 f"{events / elapsed:,.0f} records/s, every send acknowledged")
    notes.append("per partition: " + ", ".join(f"p{p}={n:,}" for p, n in sorted(per_partition.items())))
    return per_partition


def consume_with_group(bootstrap: str, events: int, members: int, notes: list[str]) -> None:
    counts: Counter[str] = Counter()
    assignments: dict[str, list[int]] = {}
    lock = threading.Lock()
    progress = Progress("consuming", events)
    deadline = time.monotonic() + 120

    def member(name: str) -> None:
        with Consumer(TOPIC, bootstrap_servers=bootstrap, group_id="demo-readers",
                      auto_offset_reset="earliest", client_id=name) as consumer:
            idle_since = time.monotonic()
            while time.monotonic() < deadline:
                batch = consumer.poll(timeout_ms=500)
                got = sum(len(records) for records in batch.values())
                with lock:
                    counts[name] += got
                    assignments[name] = sorted(tp.partition for tp in consumer.assignment())
                    total = sum(counts.values())
                progress.advance(got)
                if got:
                    idle_since = time.monotonic()
                elif total >= events or time.monotonic() - idle_since > 10:
                    break

    started = time.perf_counter()
    threads = [threading.Thread(target=member, args=(f"reader-{i}",)) for i in range(members)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    progress.close()
    elapsed = time.perf_counter() - started
    total = sum(counts.values())
    notes.append(f"{members} group members read {total:,} of {events:,} records "
                 f"({total / elapsed:,.0f} records/s)")
    notes.append("members: " + "; ".join(f"{m} partitions {p} read {counts[m]:,}"
                                         for m, p in sorted(assignments.items())))


def run_spark(bootstrap: str, notes: list[str]) -> None:
    try:
        import pyspark  # noqa: F401  (the optional "spark" extra)
    except ImportError:
        notes.append("skipped: PySpark is not installed (pip install 'kafkalite[spark]')")
        return
    from kafkalite.spark import demo_job

    # Everything runs on loopback; this spares Spark a hostname lookup and its warning.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    result: dict[str, Any] = demo_job(bootstrap, TOPIC)
    for key, value in result.items():
        notes.append(f"{key}: {value}")


Leadership = dict[int, tuple[int, tuple[int, ...]]]
"""Partition -> (leader, ISR) as the cluster's metadata says."""


def leadership(admin: AdminClient, topic: str) -> Leadership:
    return {m.partition: (m.leader, tuple(sorted(m.isr)))
            for m in admin.describe_topics([topic])[topic].partitions}


def wait_for(admin: AdminClient, topic: str, settled: Callable[[Leadership], bool],
             timeout_s: float = 60) -> Leadership:
    """Polls metadata until ``settled`` holds (the controller acts asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = leadership(admin, topic)
        if settled(state) or time.monotonic() > deadline:
            return state
        time.sleep(0.2)


def show(state: Leadership) -> str:
    return ", ".join(f"p{p} leader {leader} isr {list(isr)}"
                     for p, (leader, isr) in sorted(state.items()))


def survive_a_crash(cluster: Any, events: int, notes: list[str]) -> None:
    """acks=all into RF=3, ``min.insync.replicas=2``; one broker is killed half-way."""
    bootstrap = cluster.bootstrap_servers  # every broker, the one about to die included
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(ORDERS, ORDER_PARTITIONS, REPLICATION_FACTOR, config={
            "min.insync.replicas": str(MIN_INSYNC_REPLICAS)})])
        before = wait_for(admin, ORDERS, lambda s: len(s) == ORDER_PARTITIONS and all(
            leader >= 0 and len(isr) == REPLICATION_FACTOR for leader, isr in s.values()))
        victim, controller = before[0][0], cluster.controller_id
        notes.append(f"{ORDERS}: {ORDER_PARTITIONS} partitions, replication factor "
                     f"{REPLICATION_FACTOR}, min.insync.replicas={MIN_INSYNC_REPLICAS}")
        notes.append(f"before: {show(before)}")

        sent: list[tuple[str, FutureRecordMetadata]] = []
        started = time.perf_counter()
        with Producer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                      linger_ms=5, key_serializer=str.encode,
                      value_serializer=str.encode) as producer:
            for i in range(events):
                value = f"order-{i}"
                sent.append((value, producer.send(ORDERS, value, key=f"customer-{i % 101}")))
                if i == events // 2:
                    cluster.kill_broker(victim)
                    notes.append(f"killed broker {victim} (leader of {ORDERS}-0) after "
                                 f"{i + 1:,} sends, with sends in flight")
            producer.flush()
        acked: dict[str, tuple[int, int]] = {}
        failures: Counter[str] = Counter()
        for value, future in sent:
            try:
                meta = future.get(timeout=60)
            except KafkaError as exc:
                failures[type(exc).__name__] += 1
            else:
                acked[value] = (meta.partition, meta.offset)
        elapsed = time.perf_counter() - started
        notes.append(f"{len(acked):,} of {events:,} acks=all sends acknowledged "
                     f"({events / elapsed:,.0f} records/s)"
                     + (f"; failed: {dict(failures)}" if failures else ""))

        after = wait_for(admin, ORDERS, lambda s: all(
            leader not in (-1, victim) and victim not in isr for leader, isr in s.values()))
        moved = sorted(p for p, (leader, _) in before.items() if leader != after[p][0])
        notes.append(f"controller: broker {controller} -> broker {cluster.controller_id}")
        notes.append("leader moves: " + (", ".join(
            f"p{p} {before[p][0]}->{after[p][0]}" for p in moved) or "none"))
        notes.append(f"after: {show(after)}")

    found, placed = read_back(bootstrap, acked)
    lost = sorted(set(acked) - placed, key=lambda v: int(v.partition("-")[2]))
    duplicates = sum(n - 1 for n in found.values() if n > 1)
    notes.append(f"read back {sum(found.values()):,} records: {len(placed):,} of "
                 f"{len(acked):,} acknowledged at their acknowledged offsets, "
                 f"{len(lost)} lost, {duplicates} duplicates")
    if lost or duplicates:
        raise RuntimeError(f"after the crash {len(lost)} acknowledged records are missing "
                           f"(first: {lost[:5]}) and {duplicates} are duplicated")


def read_back(bootstrap: str, acked: dict[str, tuple[int, int]]
              ) -> tuple[Counter[str], set[str]]:
    """Reads the topic up to the last acknowledged offsets: how often each value occurs,
    and which acknowledged values sit at the partition and offset their ack named."""
    found: Counter[str] = Counter()
    placed: set[str] = set()
    ends: dict[int, int] = {}
    for partition, offset in acked.values():
        ends[partition] = max(ends.get(partition, 0), offset + 1)
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                  enable_auto_commit=False, value_deserializer=bytes.decode) as consumer:
        consumer.assign([TopicPartition(ORDERS, p) for p in range(ORDER_PARTITIONS)])
        positions = dict.fromkeys(range(ORDER_PARTITIONS), 0)
        deadline = time.monotonic() + 60
        while any(positions[p] < end for p, end in ends.items()) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for record in records:
                    positions[tp.partition] = record.offset + 1
                    found[record.value] += 1
                    if acked.get(record.value) == (tp.partition, record.offset):
                        placed.add(record.value)
    return found, placed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalite.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, help="clickstream events to produce")
    parser.add_argument("--users", type=int, default=50_000, help="distinct users")
    parser.add_argument("--members", type=int, default=3, help="consumer group members")
    parser.add_argument("--orders", type=int, default=20_000,
                        help="acks=all records produced around the broker crash")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark step")
    args = parser.parse_args(argv)

    from kafkalite_server import EmbeddedCluster

    report = Report()
    steps: list[tuple[str, Callable[[list[str]], object]]] = []
    with report.step("start a replicating 3-broker cluster") as notes:
        cluster = EmbeddedCluster(num_brokers=3, config={
            "num.partitions": str(PARTITIONS),
            "default.replication.factor": str(REPLICATION_FACTOR),
            "min.insync.replicas": str(MIN_INSYNC_REPLICAS),
            # Kafka's default is 3000 ms; one second is enough for every member to make
            # the first generation, so the group starts balanced.
            "group.initial.rebalance.delay.ms": "1000",
            "controlled.shutdown.retry.backoff.ms": "100"})
        cluster.start()
        notes.append(f"bootstrap servers {cluster.bootstrap_servers}; controller is broker "
                     f"{cluster.controller_id}")
    try:
        bootstrap = cluster.bootstrap_servers
        steps.append(("produce the clickstream", lambda n: produce(bootstrap, args.events, args.users, n)))
        steps.append(("consume it with a consumer group",
                      lambda n: consume_with_group(bootstrap, args.events, args.members, n)))
        if not args.no_spark:
            steps.append(("Spark: read, aggregate, group consumers", lambda n: run_spark(bootstrap, n)))
        steps.append(("kill a broker while producing acks=all",
                      lambda n: survive_a_crash(cluster, args.orders, n)))
        for name, action in steps:
            with report.step(name) as notes:
                action(notes)
    finally:
        with report.step("stop the cluster") as notes:
            cluster.stop()
            notes.append("clean shutdown")
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
