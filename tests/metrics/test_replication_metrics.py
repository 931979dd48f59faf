"""Under-replicated partitions as three ``kafkalite-server`` processes over a real
ZooKeeper report them: a killed broker leaves the partitions it replicated
under-replicated on their leaders, and they count 0 again once it is back in the ISR."""

from __future__ import annotations

import functools
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import until
from prometheus_client.parser import text_string_to_metric_families

from kafkalite.protocol import ApiKey

BROKERS = (1, 2, 3)
PARTITIONS = 3
_until = functools.partial(until, tolerate=(OSError, KeyError, AssertionError, IndexError))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    def __init__(self, root: Path, connect: str, process_type: type, wire: Any) -> None:
        self.wire = wire
        self.metrics_ports = {b: _free_port() for b in BROKERS}
        self.brokers = {b: process_type(root / f"broker-{b}", [
            "--set", f"broker.id={b}", "--set", f"zookeeper.connect={connect}",
            "--set", "zookeeper.session.timeout.ms=6000",
            "--set", "replica.lag.time.max.ms=3000",
            "--set", "replica.fetch.backoff.ms=200",
            "--set", f"kafkalite.metrics.listener=127.0.0.1:{self.metrics_ports[b]}"])
            for b in BROKERS}

    def gauge(self, broker: int, name: str) -> float:
        url = f"http://127.0.0.1:{self.metrics_ports[broker]}/metrics"
        with urllib.request.urlopen(url, timeout=30) as answer:
            text = answer.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and not sample.labels:
                    return sample.value
        raise KeyError(name)

    def partitions(self, topic: str) -> list[dict[str, Any]]:
        via = next(b for b in self.brokers.values() if b.process)
        body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        answer = self.wire(via.bootstrap_servers).call(ApiKey.METADATA, 8, body)
        return answer["topics"][0]["partitions"]  # type: ignore[no-any-return]

    def create(self, topic: str) -> None:
        via = self.brokers[1]
        body = {"topics": [{"name": topic, "num_partitions": PARTITIONS,
                            "replication_factor": 3, "assignments": [], "configs": []}],
                "timeout_ms": 5000, "validate_only": False}
        answer = self.wire(via.bootstrap_servers).call(ApiKey.CREATE_TOPICS, 4, body)
        assert answer["topics"][0]["error_code"] == 0, answer
        _until(lambda: all(len(p["isr_nodes"]) == 3 for p in self.partitions(topic))
               and len(self.partitions(topic)) == PARTITIONS, "a full ISR everywhere")

    def under_replicated(self) -> float:
        return sum(self.gauge(b, "kafka_server_replicamanager_underreplicatedpartitions")
                   for b, process in self.brokers.items() if process.process)


@pytest.fixture
def cluster(tmp_path: Path, zookeeper: Any, chroot: str, broker_process_type: type,
            wire: Any) -> Iterator[Cluster]:
    started = Cluster(tmp_path, zookeeper.connect + chroot, broker_process_type, wire)
    try:
        for broker in started.brokers.values():
            broker.start()
        yield started
    finally:
        for broker in started.brokers.values():
            broker.kill()


def test_under_replicated_follows_a_killed_broker_and_its_return(cluster: Cluster) -> None:
    cluster.create("watched")
    _until(lambda: cluster.under_replicated() == 0, "no under-replicated partition")
    assert sum(cluster.gauge(b, "kafka_controller_kafkacontroller_activecontrollercount")
               for b in BROKERS) == 1
    victim = 3
    led_elsewhere = [p for p in cluster.partitions("watched") if p["leader_id"] != victim]
    cluster.brokers[victim].kill()
    # Each partition the victim does not lead loses a replica of its ISR; those it led move
    # to a new leader without it in the ISR: every partition (RF=3 over 3 brokers) counts.
    assert len(led_elsewhere) >= 1
    _until(lambda: cluster.under_replicated() == PARTITIONS,
           f"{PARTITIONS} under-replicated partitions with broker {victim} down")
    cluster.brokers[victim].start()
    _until(lambda: cluster.under_replicated() == 0, "the partitions replicated again",
           timeout=60)
    # The controller took the dead broker out of the ISRs; the leaders took it back in.
    assert sum(cluster.gauge(b, "kafka_server_replicamanager_isrexpands_total")
               for b in BROKERS) >= 1
