"""Three ``kafkalite-server`` processes over a real ZooKeeper: a stale controller (SIGSTOP
past the session timeout) fenced by the new epoch, preferred leader election through
``kafkalite topics elect-leaders`` and by the automatic rebalance, and topic and broker
configs through /config/topics, /config/brokers and /config/changes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from kazoo.exceptions import NoNodeError
from test_cluster_processes import Cluster, wait_until

from kafkalite.protocol import ApiKey
from kafkalite_server.cluster import metadata_layout as layout
from tests.conftest import build_batch

REPO_ROOT = Path(__file__).resolve().parents[2]


class SetCluster(Cluster):
    """The three-process cluster, every broker started with ``extra`` settings too."""

    extra: ClassVar[list[str]] = []

    def start(self, broker_id: int) -> Any:
        broker = self.process_type(self.root / f"broker-{broker_id}", [
            "--set", f"broker.id={broker_id}", "--set", f"zookeeper.connect={self.connect}",
            "--set", "zookeeper.session.timeout.ms=6000",
            "--set", "controlled.shutdown.retry.backoff.ms=200", *self.extra]).start()
        self.brokers[broker_id] = broker
        return broker


def _start(tmp_path: Path, zookeeper: Any, chroot: str, process_type: type,
           extra: dict[str, str]) -> Cluster:
    cluster = SetCluster(tmp_path, zookeeper.connect + chroot, process_type)
    cluster.extra = [arg for key, value in extra.items() for arg in ("--set", f"{key}={value}")]
    for broker_id in (1, 2, 3):
        cluster.start(broker_id)
    return cluster


@pytest.fixture
def cluster(tmp_path, zookeeper, chroot, broker_process_type) -> Iterator[Cluster]:
    started = _start(tmp_path, zookeeper, chroot, broker_process_type, {})
    try:
        yield started
    finally:
        started.close()


def _controller(cluster: Cluster) -> tuple[int, int] | None:
    try:
        return cluster.controller()
    except NoNodeError:  # between two controllers
        return None


def _seed(cluster: Cluster, topic: str, partitions: dict[int, tuple[list[int], int]]) -> None:
    """A topic whose ISR is full but whose leader is not the preferred replica."""
    transaction = cluster.zk.transaction()
    transaction.create(layout.topic_path(topic), layout.encode_assignment(
        {index: replicas for index, (replicas, _leader) in partitions.items()}))
    transaction.create(f"{layout.topic_path(topic)}/partitions")
    for index, (replicas, leader) in partitions.items():
        state = layout.partition_state_path(topic, index)
        transaction.create(state.rsplit("/", 1)[0])
        transaction.create(state, layout.LeaderIsr(leader, 0, tuple(replicas), 0).encode())
    assert all(r is True or isinstance(r, str) for r in transaction.commit())


def test_a_stale_controller_is_fenced_and_stops_acting(cluster, wire):
    owner, epoch = wait_until(cluster.controller, "a controller")
    stale = cluster.brokers[owner]
    os.kill(stale.process.pid, signal.SIGSTOP)
    try:
        new_owner, new_epoch = wait_until(
            lambda: (c := _controller(cluster)) and c[0] != owner and c, "a new controller")
    finally:
        os.kill(stale.process.pid, signal.SIGCONT)
    assert new_epoch > epoch
    # It noticed, stepped down and registered again as an ordinary broker.
    wait_until(lambda: "registering again" in stale.log_text(), "the old controller to re-register")
    wait_until(lambda: sorted(cluster.zk.get_children("/brokers/ids")) == ["1", "2", "3"],
           "three registered brokers")
    # What the old controller would still send is refused by every broker (the old one
    # too, once the new controller has told it the new epoch).
    message = {"controller_id": owner, "controller_epoch": epoch,
               "ungrouped_partition_states": [], "live_brokers": []}
    for broker_id, broker in cluster.brokers.items():
        client = wire(broker.bootstrap_servers)
        wait_until(lambda c=client: c.call(ApiKey.UPDATE_METADATA, 4, message)["error_code"] == 11,
               f"broker {broker_id} to refuse epoch {epoch}")
    assert cluster.controller() == (new_owner, new_epoch)


def _cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    bootstrap = ",".join(b.bootstrap_servers for b in cluster.brokers.values())
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT),
           "KAFKALITE_BOOTSTRAP_SERVERS": bootstrap}
    return subprocess.run([sys.executable, "-m", "kafkalite.cli", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_preferred_leader_election_from_the_cli(cluster, wire):
    _seed(cluster, "pref", {0: ([1, 2, 3], 2), 1: ([2, 3, 1], 2)})
    before = wait_until(lambda: (p := cluster.partitions(wire, 3, "pref")) and len(p) == 2
                    and p[0]["leader_id"] == 2 and p, "the seeded leaders")
    done = _cli(cluster, "topics", "elect-leaders", "pref")
    assert done.returncode == 0, done.stderr
    assert "Elected a new leader for pref-0." in done.stdout
    assert "pref-1: the valid leader is already elected." in done.stdout
    after = cluster.partitions(wire, 3, "pref")
    assert after[0]["leader_id"] == 1
    assert after[0]["leader_epoch"] == before[0]["leader_epoch"] + 1
    state = json.loads(cluster.zk.get(layout.partition_state_path("pref", 0))[0])
    assert (state["leader"], state["leader_epoch"]) == (1, 1)


def test_automatic_rebalance_moves_leaders_back(tmp_path, zookeeper, chroot,
                                                broker_process_type, wire):
    cluster = _start(tmp_path, zookeeper, chroot, broker_process_type, {
        "auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "1"})
    try:
        _seed(cluster, "auto", {0: ([1, 2, 3], 3), 1: ([1, 3, 2], 3)})
        wait_until(lambda: all(p["leader_id"] == 1
                           for p in cluster.partitions(wire, 2, "auto").values()),
               "leadership back on broker 1")
    finally:
        cluster.close()


def test_configs_over_zookeeper(cluster, wire):
    create = {"topics": [{"name": "conf", "num_partitions": 3, "replication_factor": 1,
                          "assignments": [], "configs": []}],
              "timeout_ms": 5000, "validate_only": False}
    client = wire(cluster.brokers[1].bootstrap_servers)
    assert client.call(ApiKey.CREATE_TOPICS, 4, create)["topics"][0]["error_code"] == 0
    change = {"resources": [
        {"resource_type": 2, "resource_name": "conf",
         "configs": [{"name": "max.message.bytes", "config_operation": 0, "value": "3000"}]},
        {"resource_type": 4, "resource_name": "",
         "configs": [{"name": "log.retention.ms", "config_operation": 0, "value": "99999"}]}],
        "validate_only": False}
    answer = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, change)
    assert [r["error_code"] for r in answer["responses"]] == [0, 0], answer
    assert json.loads(cluster.zk.get("/config/topics/conf")[0])["config"] == {
        "max.message.bytes": "3000"}
    assert json.loads(cluster.zk.get("/config/brokers/<default>")[0])["config"] == {
        "log.retention.ms": "99999"}
    entities = {json.loads(cluster.zk.get(f"/config/changes/{n}")[0])["entity_path"]
                for n in cluster.zk.get_children("/config/changes")}
    assert {"topics/conf", "brokers/<default>"} <= entities
    describe = {"resources": [{"resource_type": 2, "resource_name": "conf",
                               "configuration_keys": ["max.message.bytes", "retention.ms"]}],
                "include_synonyms": False, "include_documentation": False}

    def described(broker_id: int) -> dict[str, str]:
        result = wire(cluster.brokers[broker_id].bootstrap_servers).call(
            ApiKey.DESCRIBE_CONFIGS, 3, describe)["results"][0]
        return {c["name"]: c["value"] for c in result["configs"]}
    for broker_id in (2, 3):
        wait_until(lambda b=broker_id: described(b) == {"max.message.bytes": "3000",
                                                    "retention.ms": "99999"},
               f"broker {broker_id} to see the change")
    # Every leader's log took the topic's new limit: a 5000-byte record is refused.
    leaders = {p["partition_index"]: p["leader_id"]
               for p in cluster.partitions(wire, 1, "conf").values()}
    for index, leader in leaders.items():
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
            {"name": "conf", "partition_data": [
                {"index": index, "records": build_batch([b"x" * 5000])}]}]}
        answer = wire(cluster.brokers[leader].bootstrap_servers).call(ApiKey.PRODUCE, 7, body)
        code = answer["responses"][0]["partition_responses"][0]["error_code"]
        assert code == 10, (index, leader, code)
