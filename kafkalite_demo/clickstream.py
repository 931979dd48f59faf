"""The demo's traffic: a clickstream keyed by user, produced through a custom partitioner
and read back by a consumer group."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from typing import Any

from kafkalite import Consumer, Producer
from kafkalite.cli.progress import Progress
from kafkalite.producer import FutureRecordMetadata
from kafkalite.producer.partitioners import Partitioner, murmur2
from kafkalite.serde import MsgpackSerializer

TOPIC = "clickstream"
PARTITIONS = 8
PAGES = ("/", "/search", "/product", "/cart", "/checkout", "/help")
ACTIONS = ("view", "click", "scroll", "purchase")
GROUP = "demo-readers"


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


def is_eu_partition(partition: int, partitions: int = PARTITIONS) -> bool:
    """Whether :class:`RegionPartitioner` sends EU users to ``partition``."""
    return partition < partitions - partitions // 2


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
    """Sends the clickstream and returns how many records each partition acknowledged."""
    per_partition: Counter[int] = Counter()
    started = time.perf_counter()
    with Producer(bootstrap_servers=bootstrap, partitioner=RegionPartitioner(),
                  key_serializer=str.encode, value_serializer=MsgpackSerializer(),
                  compression_type="lz4", linger_ms=5, acks=1) as producer, \
            Progress(events, "producing", enabled=True) as progress:
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
    elapsed = time.perf_counter() - started
    notes.append(f"{events:,} msgpack events, lz4, RegionPartitioner: "
                 f"{events / elapsed:,.0f} records/s, every send acknowledged")
    notes.append("per partition: " + ", ".join(f"p{p}={n:,}"
                                               for p, n in sorted(per_partition.items())))
    return per_partition


def consume_with_group(bootstrap: str, events: int, members: int, notes: list[str]) -> None:
    """``members`` threads in one group read the clickstream until all of it has arrived
    (or nothing has for 10 s)."""
    counts: Counter[str] = Counter()
    assignments: dict[str, list[int]] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + 120

    def member(name: str, progress: Progress) -> None:
        with Consumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP,
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
    with Progress(events, "consuming", enabled=True) as progress:
        threads = [threading.Thread(target=member, args=(f"reader-{i}", progress))
                   for i in range(members)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    elapsed = time.perf_counter() - started
    total = sum(counts.values())
    notes.append(f"{members} group members read {total:,} of {events:,} records "
                 f"({total / elapsed:,.0f} records/s)")
    notes.append("members: " + "; ".join(f"{m} partitions {p} read {counts[m]:,}"
                                         for m, p in sorted(assignments.items())))
