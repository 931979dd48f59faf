"""The demo's failure: a broker killed in the middle of an acks=all stream into a
replicated topic, then every acknowledged record read back where its ack said it was."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalite import Consumer, Producer
from kafkalite.admin import AdminClient, NewTopic
from kafkalite.errors import KafkaError
from kafkalite.producer import FutureRecordMetadata
from kafkalite.structs import TopicPartition

ORDERS = "orders"
ORDER_PARTITIONS = 6
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2

Leadership = dict[int, tuple[int, tuple[int, ...]]]
"""Partition -> (leader, ISR) as the cluster's metadata says."""


@dataclass(frozen=True)
class LeaderMoves:
    """The orders topic's leaders and ISRs before the kill and once they settled after it."""

    killed: int
    before: Leadership
    after: Leadership


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


def survive_a_crash(cluster: Any, events: int, notes: list[str]) -> LeaderMoves:
    """acks=all into RF=3, ``min.insync.replicas=2``; one broker is killed half-way.

    Raises RuntimeError when an acknowledged record is missing or duplicated afterwards.
    """
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
    return LeaderMoves(victim, before, after)


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
