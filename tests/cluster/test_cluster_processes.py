"""Three ``kafkalite-server`` processes over a real ZooKeeper: controller failover, leader
election on a broker's death, a duplicate broker id, and a clean stop that moves leadership
away first. Session timeout 6 s: every wait below is bounded by a few of them."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import NoNodeError
from polling import until
from zookeeper_server import chrooted_client

from kafkalite.protocol import ApiKey

SESSION_MS = 6000
WAIT_S = 4 * SESSION_MS / 1000


wait_until = functools.partial(until, timeout=WAIT_S,
                               tolerate=(OSError, KeyError, AssertionError, NoNodeError))
"""``until`` bounded by a few sessions, tolerating what a cluster in motion answers."""


class Cluster:
    def __init__(self, root: Path, connect: str, process_type: type) -> None:
        self.process_type = process_type
        self.root = root
        self.connect = connect
        self.brokers: dict[int, Any] = {}
        self.zk = chrooted_client(connect, timeout_s=10)

    def start(self, broker_id: int) -> Any:
        broker = self.process_type(self.root / f"broker-{broker_id}", [
            "--set", f"broker.id={broker_id}", "--set", f"zookeeper.connect={self.connect}",
            "--set", f"zookeeper.session.timeout.ms={SESSION_MS}",
            "--set", "controlled.shutdown.retry.backoff.ms=200"]).start()
        self.brokers[broker_id] = broker
        return broker

    def controller(self) -> tuple[int, int]:
        """(broker id of /controller, /controller_epoch)."""
        owner = json.loads(self.zk.get("/controller")[0])["brokerid"]
        return owner, int(self.zk.get("/controller_epoch")[0])

    def partitions(self, wire: Callable[[str], Any], via: int, topic: str
                   ) -> dict[int, dict[str, Any]]:
        client = wire(self.brokers[via].bootstrap_servers)
        body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        answer = client.call(ApiKey.METADATA, 8, body)["topics"][0]
        return {p["partition_index"]: p for p in answer["partitions"]}

    def close(self) -> None:
        for broker in self.brokers.values():
            broker.kill()
        self.zk.stop()
        self.zk.close()


@contextlib.contextmanager
def running_cluster(root: Path, connect: str, process_type: type,
                    broker_ids: tuple[int, ...] = (1, 2, 3)) -> Iterator[Cluster]:
    """Brokers started (1-3 unless told); every started one is killed at the end, also
    when a later one fails to start."""
    started = Cluster(root, connect, process_type)
    try:
        for broker_id in broker_ids:
            started.start(broker_id)
        yield started
    finally:
        started.close()


@pytest.fixture
def cluster(tmp_path: Path, zookeeper: Any, chroot: str,
            broker_process_type: type) -> Iterator[Cluster]:
    with running_cluster(tmp_path, zookeeper.connect + chroot, broker_process_type) as started:
        yield started


def _create(wire: Callable[[str], Any], broker: Any, topic: str,
            partitions: int) -> None:
    body = {"topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 3,
                        "assignments": [], "configs": []}],
            "timeout_ms": 5000, "validate_only": False}
    answer = wire(broker.bootstrap_servers).call(ApiKey.CREATE_TOPICS, 4, body)
    assert answer["topics"][0]["error_code"] == 0, answer


def _all_led(cluster: Cluster, wire: Callable[[str], Any], via: int, topic: str,
             count: int) -> dict[int, dict[str, Any]] | None:
    found = cluster.partitions(wire, via, topic)
    if len(found) == count and all(p["leader_id"] in cluster.brokers for p in found.values()):
        return found
    return None


def test_killing_the_controller_elects_another_with_a_higher_epoch(cluster, wire):
    owner, epoch = wait_until(cluster.controller, "a controller")
    cluster.brokers.pop(owner).kill()
    new_owner, new_epoch = wait_until(
        lambda: (c := cluster.controller()) and c[0] != owner and c, "a new controller")
    assert new_owner in cluster.brokers and new_epoch > epoch


def test_killing_a_leader_moves_its_partitions_with_bumped_epochs(cluster, wire):
    _create(wire, cluster.brokers[1], "moving", 3)
    before = wait_until(lambda: _all_led(cluster, wire, 1, "moving", 3), "leaders")
    assert all(sorted(p["replica_nodes"]) == [1, 2, 3] for p in before.values())
    victim = before[0]["leader_id"]
    cluster.brokers.pop(victim).kill()
    survivor = next(iter(cluster.brokers))
    after = wait_until(lambda: _all_led(cluster, wire, survivor, "moving", 3), "new leaders")
    for index, partition in before.items():
        if partition["leader_id"] == victim:
            assert after[index]["leader_epoch"] > partition["leader_epoch"]
            assert victim not in after[index]["isr_nodes"]
            assert after[index]["offline_replicas"] == [victim]


def test_a_second_broker_with_the_same_id_fails_to_start(cluster, tmp_path):
    duplicate = cluster.process_type(tmp_path / "duplicate", [
        "--set", "broker.id=2", "--set", f"zookeeper.connect={cluster.connect}",
        # it waits twice its session timeout for the registration to go before it gives up
        "--set", f"zookeeper.session.timeout.ms={SESSION_MS}"])
    with pytest.raises(RuntimeError, match=r"broker\.id 2 is already registered"):
        duplicate.start()


def test_a_clean_stop_moves_leadership_away_first(cluster, wire):
    _create(wire, cluster.brokers[1], "handover", 3)
    before = wait_until(lambda: _all_led(cluster, wire, 1, "handover", 3), "leaders")
    stopping = before[0]["leader_id"]
    assert cluster.brokers.pop(stopping).terminate() == 0
    survivor = next(iter(cluster.brokers))
    # Moved during the controlled shutdown, before the process exited: no wait needed.
    after = cluster.partitions(wire, survivor, "handover")
    assert all(p["leader_id"] != stopping and p["leader_id"] in cluster.brokers
               for p in after.values())
