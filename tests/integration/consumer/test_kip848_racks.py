"""Rack-aware consumer-group assignment (KIP-881 in KIP-848): three brokers, one per rack,
a topic with each partition's only replica in another rack, and three
``group.protocol=consumer`` members each giving its rack (librdkafka's ``client.rack``,
kafkalite's ``client_rack``): each ends with the partition whose replica is in its own
rack."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite import Consumer as KafkaliteConsumer
from kafkalite.admin import AdminClient, NewTopic
from kafkalite_server import EmbeddedCluster
from kafkalite_server.config import BrokerConfig
from tests.conftest import TEST_BROKER_CONFIG
from tests.polling import until

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, TopicPartition  # noqa: E402

RACKS = ["rack-a", "rack-b", "rack-c"]
TOPIC, GROUP = "racked-orders", "racked-group"


class RackedCluster(EmbeddedCluster):
    """An EmbeddedCluster whose broker ``i`` runs in ``RACKS[i]``."""

    def _broker_config(self, broker_id: int) -> BrokerConfig:
        self._settings["broker.rack"] = RACKS[broker_id]
        return super()._broker_config(broker_id)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    config = {**TEST_BROKER_CONFIG, "group.consumer.heartbeat.interval.ms": "300"}
    with RackedCluster(num_brokers=3, config=config) as started:
        with AdminClient(started.bootstrap_servers) as admin:
            # partition p's only replica is on broker 2 - p: in rack RACKS[2 - p]
            admin.create_topics([NewTopic(TOPIC, replica_assignments={
                p: [2 - p] for p in range(3)})])
            admin.wait_for_topics([TOPIC])
        yield started


class Member:
    """One librdkafka member in ``rack``, polled on its own thread."""

    def __init__(self, cluster: EmbeddedCluster, rack: str) -> None:
        self.rack = rack
        self.owned: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = self._subscribed(cluster)
        self._thread = threading.Thread(target=self._run, name=rack)
        self._thread.start()

    def _subscribed(self, cluster: EmbeddedCluster) -> Any:
        consumer = Consumer({
            "bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP,
            "group.protocol": "consumer", "client.rack": self.rack, "client.id": self.rack})
        consumer.subscribe([TOPIC], on_assign=self._assigned, on_revoke=self._revoked)
        return consumer

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self.owned |= {tp.partition for tp in partitions}

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self.owned -= {tp.partition for tp in partitions}

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.1)
        self._consumer.close()

    def partitions(self) -> set[int]:
        with self._lock:
            return set(self.owned)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


class KafkaliteMember(Member):
    """A kafkalite ``Consumer(group_protocol="consumer")`` in ``rack``."""

    def _subscribed(self, cluster: EmbeddedCluster) -> Any:
        consumer = KafkaliteConsumer(bootstrap_servers=cluster.bootstrap_servers,
                                     group_id=GROUP, group_protocol="consumer",
                                     client_rack=self.rack, client_id=self.rack)
        consumer.subscribe([TOPIC])
        return consumer

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(timeout_ms=100)
            with self._lock:
                self.owned = {tp.partition for tp in self._consumer.assignment()}
        self._consumer.close()


def test_each_member_gets_the_partition_in_its_rack(cluster: EmbeddedCluster) -> None:
    members: list[Member] = []
    try:
        for rack in RACKS:  # one at a time: the first holds all, each newcomer takes over
            kind = KafkaliteMember if rack == RACKS[0] else Member  # its rack's partition
            members.append(kind(cluster, rack))
            until(members[-1].partitions, f"the member in {rack} holding a partition", 60)
        local = {rack: {2 - RACKS.index(rack)} for rack in RACKS}
        until(lambda: {m.rack: m.partitions() for m in members} == local,
              "each member holding its rack's partition", 60)
    finally:
        for member in members:
            member.close()
