"""Topic ids (KIP-516) on three ``kafkalite-server`` processes over a real ZooKeeper: the
id the controller stores in ``/brokers/topics/<t>`` is the one every broker answers in
Metadata v10+ and writes into ``partition.metadata``; it survives a controller failover
and a restart; a topic created again under its name gets another; and a broker that kept a
deleted topic's directory (it was down during the deletion) sets it aside instead of
serving it as the new topic's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from test_cluster_processes import Cluster, running_cluster, wait_until

from kafkalite.protocol import ApiKey
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.log.partition_metadata import read_topic_id
from kafkalite_server.topic_ids import ZERO
from tests.conftest import BrokerProcess, WireClient


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, zookeeper: Any) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("topic-ids"), zookeeper.connect + "/topic_ids",
                         BrokerProcess) as started:
        yield started


def _call(broker: Any, api_key: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
    client = WireClient(broker.bootstrap_servers)
    try:
        return client.call(api_key, version, body)
    finally:
        client.close()


def _running(cluster: Cluster) -> list[Any]:
    return [b for b in cluster.brokers.values() if b.process is not None]


def _described(broker: Any, topic: str) -> dict[str, Any]:
    return _call(broker, ApiKey.METADATA, 10, {
        "topics": [{"name": topic, "topic_id": ZERO}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})["topics"][0]


def _led_everywhere(cluster: Cluster, topic: str, partitions: int) -> Any:
    """The topic's id once every running broker answers it with all partitions led."""
    answers = [_described(b, topic) for b in _running(cluster)]
    ids = {a["topic_id"] for a in answers}
    if len(ids) == 1 and all(len(a["partitions"]) == partitions
                             and all(p["leader_id"] >= 0 for p in a["partitions"])
                             for a in answers):
        return ids.pop()
    return None


def _create(cluster: Cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    body = {"topics": [{"name": topic, "num_partitions": -1, "replication_factor": -1,
                        "assignments": [{"partition_index": p, "broker_ids": r}
                                        for p, r in assignment.items()],
                        "configs": []}], "timeout_ms": 10_000, "validate_only": False}
    answer = _call(_running(cluster)[0], ApiKey.CREATE_TOPICS, 4, body)
    assert answer["topics"][0]["error_code"] == 0, answer


def _delete(cluster: Cluster, topic: str) -> None:
    answer = _call(_running(cluster)[0], ApiKey.DELETE_TOPICS, 3,
                   {"topic_names": [topic], "timeout_ms": 10_000})
    assert answer["responses"][0]["error_code"] == 0, answer
    wait_until(lambda: all(_described(b, topic)["error_code"] == 3 for b in _running(cluster)),
           "the topic gone from every broker")


def _stored_id(cluster: Cluster, topic: str) -> Any:
    return layout.decode_topic_id(topic, cluster.zk.get(layout.topic_path(topic))[0])


def _produce(cluster: Cluster, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": ",".join(b.bootstrap_servers
                                                       for b in _running(cluster)),
                         "acks": "all", "message.timeout.ms": 20_000})
    for index in range(count):
        producer.produce(topic, f"record-{index}".encode(), partition=0)
    assert producer.flush(25) == 0


def _partition_dir(cluster: Cluster, broker_id: int, topic: str) -> Path:
    return cluster.brokers[broker_id].data_dir / f"{topic}-0"


def test_the_stored_id_is_served_everywhere_and_survives_failover_and_restart(cluster):
    _create(cluster, "ids", {0: [1, 2, 3]})
    topic_id = wait_until(lambda: _led_everywhere(cluster, "ids", 1), "the topic everywhere")
    assert topic_id not in (None, ZERO) and _stored_id(cluster, "ids") == topic_id
    wait_until(lambda: all(read_topic_id(_partition_dir(cluster, b, "ids")) == topic_id
                       for b in (1, 2, 3)), "partition.metadata in each replica")

    owner, _epoch = wait_until(cluster.controller, "a controller")
    cluster.brokers[owner].kill()
    wait_until(lambda: (c := cluster.controller()) and c[0] != owner, "a new controller")
    assert wait_until(lambda: _led_everywhere(cluster, "ids", 1), "ids after failover") == topic_id
    cluster.brokers[owner].start()
    assert wait_until(lambda: _led_everywhere(cluster, "ids", 1), "ids after restart") == topic_id
    assert _stored_id(cluster, "ids") == topic_id


def test_a_recreated_topic_gets_a_new_id_and_a_stale_directory_is_set_aside(cluster):
    _create(cluster, "again", {0: [1, 2, 3]})
    old_id = wait_until(lambda: _led_everywhere(cluster, "again", 1), "the first topic")
    _produce(cluster, "again", 5)
    absent = cluster.brokers[3]
    wait_until(lambda: read_topic_id(_partition_dir(cluster, 3, "again")) == old_id,
           "broker 3's replica")
    assert absent.terminate() == 0
    _delete(cluster, "again")
    absent.start()  # it kept the deleted topic's directory: no StopReplica reached it
    assert read_topic_id(_partition_dir(cluster, 3, "again")) == old_id

    _create(cluster, "again", {0: [3, 1, 2]})
    new_id = wait_until(lambda: _led_everywhere(cluster, "again", 1), "the topic created again")
    assert new_id not in (old_id, ZERO) and _stored_id(cluster, "again") == new_id
    stray = absent.data_dir / f"again-0.{old_id.hex}-stray"
    wait_until(lambda: stray.is_dir(), "the stale directory set aside")
    assert read_topic_id(_partition_dir(cluster, 3, "again")) == new_id
    assert "moved aside" in absent.log_text()
    _produce(cluster, "again", 2)
    offsets = _call(absent, ApiKey.LIST_OFFSETS, 1, {
        "replica_id": -1, "topics": [{"name": "again", "partitions": [
            {"partition_index": 0, "timestamp": -1}]}]})
    assert offsets["topics"][0]["partitions"][0]["offset"] == 2  # the new topic's, not 5
