"""An idempotent acks=all Producer and a group Consumer keep going when a partition leader
that is not the controller is SIGKILLed: three ``kafkalite-server`` processes over a real
ZooKeeper (the fault suite's cluster, without faults on its links).

A SIGKILLed broker's sockets close at once, so the requests in flight to it fail on the
connection error and are retried against the new leader as soon as the controller has
elected one (one ZooKeeper session after the kill) and one metadata refresh has named it.
Nothing may wait out ``request_timeout_ms`` (30 s): every wait below is bounded well under
it, so a stall that long fails the test.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "faults"))
from cluster import SESSION_MS, FaultCluster, ZooKeeperServer, until

from kafkalite import Consumer, Producer

pytestmark = pytest.mark.slow

TOPIC = "orders"
PARTITIONS = 6
REQUEST_TIMEOUT_MS = 30_000
RECOVERY_S = SESSION_MS / 1000 + 12
"""The session that tells the controller, a metadata refresh, and slack for a loaded
machine: well under ``REQUEST_TIMEOUT_MS``, the stall this test exists to catch."""


class Progress:
    """When each partition last made progress (an acknowledgement, or a record read)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.last: dict[int, float] = {}
        self.count = 0

    def saw(self, partition: int) -> None:
        with self._lock:
            self.last[partition] = time.monotonic()
            self.count += 1

    def all_since(self, moment: float) -> bool:
        with self._lock:
            return all(self.last.get(p, 0.0) > moment for p in range(PARTITIONS))


def test_a_killed_leader_stalls_producer_and_consumer_no_longer_than_a_failover(
        tmp_path: Path, zookeeper: ZooKeeperServer) -> None:
    with FaultCluster(tmp_path, zookeeper) as cluster:
        cluster.start_all()
        cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        cluster.wait_full_isr(TOPIC, PARTITIONS)
        controller = cluster.controller()
        leaders = {p: cluster.leader(TOPIC, p) for p in range(PARTITIONS)}
        victim = next(b for b in leaders.values() if b != controller)

        acked, consumed = Progress(), Progress()
        errors: list[BaseException] = []
        stop = threading.Event()
        producer = Producer(bootstrap_servers=cluster.bootstrap, acks="all",
                            enable_idempotence=True, linger_ms=5,
                            request_timeout_ms=REQUEST_TIMEOUT_MS)
        consumer = Consumer(TOPIC, bootstrap_servers=cluster.bootstrap, group_id="orders",
                            auto_offset_reset="earliest", session_timeout_ms=6000,
                            heartbeat_interval_ms=1000, request_timeout_ms=REQUEST_TIMEOUT_MS)

        def produce() -> None:
            sent = 0
            while not stop.is_set():
                for partition in range(PARTITIONS):
                    future = producer.send(TOPIC, b"order-%d" % sent, partition=partition)
                    future.add_callback(lambda meta: acked.saw(meta.partition))
                    future.add_errback(errors.append)
                    sent += 1
                time.sleep(0.005)

        def consume() -> None:
            while not stop.is_set():
                for tp, records in consumer.poll(timeout_ms=200).items():
                    for _ in records:
                        consumed.saw(tp.partition)

        threads = [threading.Thread(target=produce, name="produce"),
                   threading.Thread(target=consume, name="consume")]
        for thread in threads:
            thread.start()
        try:
            started = time.monotonic()
            until(lambda: acked.all_since(started) and consumed.all_since(started),
                  "every partition produced and consumed before the kill", 60)
            killed = time.monotonic()
            cluster.kill(victim)
            until(lambda: acked.all_since(killed), "acknowledgements in every partition after "
                  f"broker {victim} (a leader, not the controller) was killed", RECOVERY_S)
            until(lambda: consumed.all_since(killed), "records read from every partition "
                  f"after broker {victim} was killed", RECOVERY_S)
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
            producer.close(30)
            consumer.close()
        assert not errors, f"sends failed: {errors[:3]}"
        assert cluster.leader(TOPIC, next(p for p, b in leaders.items() if b == victim)) \
            != victim
