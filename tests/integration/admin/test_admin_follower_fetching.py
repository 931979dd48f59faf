"""Follower fetching (KIP-392) on a three-broker cluster, one broker per rack, with the
rack-aware replica selector: the leader names the follower in the consumer's rack, the
follower serves the consumer, and kafkalite's consumer (client_rack) reads from it.

(It lives with the admin tests because it belongs to the kafka-python drop-in work:
``client_rack`` is one of kafka-python's consumer keys.)"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.admin import AdminClient, NewTopic
from kafkalite.consumer import Consumer
from kafkalite.consumer.read_replicas import ReadReplicas
from kafkalite.producer import Producer
from kafkalite.protocol import ApiKey
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster
from kafkalite_server.config import BrokerConfig
from kafkalite_server.replication.replica_selector import (
    LEADER_SELECTOR,
    NO_PREFERENCE,
    RACK_AWARE_SELECTOR,
    preferred_read_replica,
)
from tests.conftest import TEST_BROKER_CONFIG, WireClient

RACKS = ["rack-a", "rack-b", "rack-c"]
TOPIC = "zoned"
TP = TopicPartition(TOPIC, 0)


class RackedCluster(EmbeddedCluster):
    """An EmbeddedCluster whose broker ``i`` runs in ``RACKS[i]``."""

    def _broker_config(self, broker_id: int) -> BrokerConfig:
        self._settings["broker.rack"] = RACKS[broker_id]
        return super()._broker_config(broker_id)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    config = {**TEST_BROKER_CONFIG, "replica.selector.class": RACK_AWARE_SELECTOR}
    with RackedCluster(num_brokers=3, config=config) as started:
        with AdminClient(started.bootstrap_servers) as admin:
            admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [0, 1, 2]})])
            admin.wait_for_topics([TOPIC])
        with Producer(bootstrap_servers=started.bootstrap_servers, acks="all") as producer:
            for i in range(10):
                producer.send(TOPIC, b"%d" % i, partition=0)
        _until_in_sync(started)
        yield started


def _until_in_sync(cluster: EmbeddedCluster) -> None:
    """Until both followers hold the ten records below their high watermark."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        partitions = [b.replica_manager.partitions.get((TOPIC, 0)) for b in cluster.brokers]
        if all(p is not None and p.high_watermark == 10 for p in partitions):
            return
        time.sleep(0.05)
    raise AssertionError("the followers did not catch up")


def fetch(cluster: EmbeddedCluster, node: int, rack: str) -> dict[str, Any]:
    endpoint = cluster.brokers[node].endpoint
    client = WireClient(f"{endpoint.host}:{endpoint.port}")
    try:
        body = client.call(ApiKey.FETCH, 11, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": rack,
            "topics": [{"topic": TOPIC, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]})
    finally:
        client.close()
    [partition] = body["responses"][0]["partitions"]
    return dict(partition)


def test_the_leader_names_the_follower_in_the_consumers_rack(cluster: EmbeddedCluster) -> None:
    redirected = fetch(cluster, 0, "rack-b")
    assert (redirected["error_code"], redirected["preferred_read_replica"]) == (0, 1)
    assert not redirected["records"] and redirected["high_watermark"] == 10
    for rack in ("rack-a", "", "rack-z"):  # the leader's own rack, none, an unknown one
        answer = fetch(cluster, 0, rack)
        assert answer["preferred_read_replica"] == NO_PREFERENCE and answer["records"]


def test_a_follower_serves_a_consumer_up_to_its_high_watermark(
        cluster: EmbeddedCluster) -> None:
    served = fetch(cluster, 2, "rack-c")
    assert (served["error_code"], served["high_watermark"]) == (0, 10)
    assert served["preferred_read_replica"] == NO_PREFERENCE and served["records"]


def test_a_consumer_with_client_rack_reads_from_its_racks_follower(
        cluster: EmbeddedCluster) -> None:
    consumer: Any = Consumer(bootstrap_servers=cluster.bootstrap_servers,
                             client_rack="rack-c", auto_offset_reset="earliest")
    consumer.assign([TP])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(values) < 10 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                values.extend(r.value for r in records)
        reading_from = consumer._fetcher._read_replicas.node_for(TP, 0, lambda n: True)
    finally:
        consumer.close()
    assert values == [b"%d" % i for i in range(10)]
    assert reading_from == 2


def test_the_selector_prefers_the_leader_and_in_sync_replicas() -> None:
    racks = {0: "a", 1: "b", 2: "b", 3: "c"}
    assert preferred_read_replica(RACK_AWARE_SELECTOR, "b", 0, [0, 1, 2], racks) == 1
    assert preferred_read_replica(RACK_AWARE_SELECTOR, "b", 0, [0, 2], racks) == 2
    assert preferred_read_replica(RACK_AWARE_SELECTOR, "c", 0, [0, 1], racks) == NO_PREFERENCE
    assert preferred_read_replica(RACK_AWARE_SELECTOR, "a", 0, [0, 1], racks) == NO_PREFERENCE
    assert preferred_read_replica(LEADER_SELECTOR, "b", 0, [0, 1], racks) == NO_PREFERENCE
    assert preferred_read_replica(None, "b", 0, [0, 1], racks) == NO_PREFERENCE


def test_a_preferred_replica_holds_until_it_expires_fails_or_goes_away() -> None:
    now = [0.0]
    replicas = ReadReplicas(ttl_s=300, clock=lambda: now[0])
    known = {0, 1, 2}
    assert replicas.node_for(TP, 0, known.__contains__) == 0
    replicas.on_partition(TP, 0, {"preferred_read_replica": 1, "error_code": 0})
    assert replicas.node_for(TP, 0, known.__contains__) == 1
    replicas.on_partition(TP, 1, {"preferred_read_replica": -1, "error_code": 0})
    assert replicas.node_for(TP, 0, known.__contains__) == 1  # data from it: still preferred
    now[0] = 300.0
    assert replicas.node_for(TP, 0, known.__contains__) == 0  # expired
    replicas.on_partition(TP, 0, {"preferred_read_replica": 2, "error_code": 0})
    assert replicas.on_partition(TP, 2, {"preferred_read_replica": -1, "error_code": 1})
    assert replicas.node_for(TP, 0, known.__contains__) == 0  # it refused the partition
    assert not replicas.on_partition(TP, 0, {"preferred_read_replica": -1, "error_code": 1})
    replicas.on_partition(TP, 0, {"preferred_read_replica": 2, "error_code": 0})
    replicas.forget_node(2)
    assert replicas.node_for(TP, 0, known.__contains__) == 0  # it stopped answering
    replicas.on_partition(TP, 0, {"preferred_read_replica": 2, "error_code": 0})
    assert replicas.node_for(TP, 0, {0, 1}.__contains__) == 0  # no longer in the metadata


def test_librdkafka_follows_the_preferred_replica_too(cluster: EmbeddedCluster) -> None:
    """confluent-kafka with ``client.rack``: its statistics name the broker it fetches the
    partition from, apart from the leader."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    stats: list[dict[str, Any]] = []
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "racked-librdkafka",
        "client.rack": "rack-b", "auto.offset.reset": "earliest",
        "statistics.interval.ms": 200, "stats_cb": lambda text: stats.append(json.loads(text))})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0)])
    values: list[bytes] = []
    fetched_from: set[tuple[int, int]] = set()
    deadline = time.monotonic() + 20
    try:
        while (len(values) < 10 or (0, 1) not in fetched_from) and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
            for sample in stats:
                partition = sample.get("topics", {}).get(TOPIC, {}).get("partitions", {})
                if "0" in partition and partition["0"]["broker"] >= 0:
                    fetched_from.add((partition["0"]["leader"], partition["0"]["broker"]))
            stats.clear()
    finally:
        consumer.close()
    assert values == [b"%d" % i for i in range(10)]
    assert (0, 1) in fetched_from
