"""Multi-broker EmbeddedCluster: placement, every broker's metadata view, moving a partition
leader by a preferred election, offline replicas, and a restart on the same data dir."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import InvalidReplicaAssignmentError

T = TypeVar("T")


def _create(client, name: str, partitions: int, replication_factor: int = 1) -> None:
    body = {"topics": [{"name": name, "num_partitions": partitions,
                        "replication_factor": replication_factor,
                        "assignments": [], "configs": []}],
            "timeout_ms": 5000, "validate_only": False}
    assert client.call(ApiKey.CREATE_TOPICS, 4, body)["topics"][0]["error_code"] == 0


def _produce(client, batch: bytes, partition: int) -> dict[str, Any]:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": "m", "partition_data": [{"index": partition,
                                                             "records": batch}]}]}
    return client.call(ApiKey.PRODUCE, 8, body)["responses"][0]["partition_responses"][0]


def _fetch(client, partition: int, epoch: int = -1) -> dict[str, Any]:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": "m", "partitions": [
                {"partition": partition, "current_leader_epoch": epoch, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}
    return client.call(ApiKey.FETCH, 11, body)["responses"][0]["partitions"][0]


def _partitions(client) -> dict[int, dict[str, Any]]:
    body = {"topics": [{"name": "m"}], "allow_auto_topic_creation": False}
    topic = client.call(ApiKey.METADATA, 8, body)["topics"][0]
    return {p["partition_index"]: p for p in topic["partitions"]}


def _leaders(client) -> dict[int, tuple[int, int]]:
    return {index: (p["leader_id"], p["leader_epoch"])
            for index, p in _partitions(client).items()}


def _settled(read: Callable[[], T], done: Callable[[T], bool]) -> T:
    """``read()`` again until ``done`` holds or ten seconds pass: the controller's
    UpdateMetadata reaches each broker a moment after CreateTopics answers."""
    for _attempt in range(200):
        value = read()
        if done(value):
            break
        time.sleep(0.05)
    return value


def test_partition_leaders_go_round_robin_and_all_brokers_agree(cluster_factory, wire):
    cluster = cluster_factory(num_brokers=3)
    clients = [wire(server) for server in cluster.bootstrap_servers.split(",")]
    _create(clients[1], "m", 7)
    views = _settled(lambda: [_leaders(client) for client in clients],
                     lambda views: all(len(view) == 7 for view in views))
    assert views[0] == views[1] == views[2]
    first = views[0][0][0]  # AdminUtils: a random start, then one broker after another
    assert {i: leader for i, (leader, _epoch) in views[0].items()} == {
        i: (first + i) % 3 for i in range(7)}
    brokers = clients[0].call(ApiKey.METADATA, 1, {"topics": []})["brokers"]
    assert sorted(b["node_id"] for b in brokers) == [0, 1, 2]


def test_produce_to_a_non_leader_is_refused(cluster_factory, wire, make_batch):
    cluster = cluster_factory(num_brokers=2)
    clients = [wire(server) for server in cluster.bootstrap_servers.split(",")]
    _create(clients[0], "m", 2)
    leaders = _settled(lambda: _leaders(clients[1]), lambda found: len(found) == 2)
    leader = leaders[1][0]
    other, owner = clients[1 - leader], clients[leader]
    assert _produce(other, make_batch([b"x"]), partition=1)["error_code"] == 6
    assert _produce(owner, make_batch([b"x"]), partition=1)["error_code"] == 0
    assert _fetch(other, 1)["error_code"] == 6  # it holds no replica of partition 1


def test_elect_leader_moves_leadership_to_a_replica_in_sync(cluster_factory, wire, make_batch,
                                                            read_records):
    cluster = cluster_factory(num_brokers=2)
    clients = [wire(server) for server in cluster.bootstrap_servers.split(",")]
    _create(clients[0], "m", 1, replication_factor=2)
    _settled(lambda: [_leaders(client) for client in clients],
             lambda views: all(view for view in views))
    leader, epoch = _leaders(clients[0])[0]
    old, new = clients[leader], clients[1 - leader]
    assert _produce(old, make_batch([b"before", b"move"]), partition=0)["base_offset"] == 0
    moved = cluster.elect_leader("m", 0, 1 - leader)
    assert (moved.leader, moved.leader_epoch) == (1 - leader, epoch + 1)
    assert moved.replicas[0] == 1 - leader  # now the preferred replica
    assert _leaders(old)[0] == (1 - leader, epoch + 1) == _leaders(new)[0]
    assert _produce(old, make_batch([b"lost"]), partition=0)["error_code"] == 6
    assert _fetch(old, 0)["error_code"] == 0  # now a follower: it serves v11 reads (KIP-392)
    assert _produce(new, make_batch([b"after"]), partition=0)["base_offset"] == 2
    fetched = _fetch(new, 0)
    assert [v for _o, _k, v, _t in read_records(fetched["records"])] == [
        b"before", b"move", b"after"]
    assert _fetch(new, 0, epoch=epoch)["error_code"] == 74  # FENCED_LEADER_EPOCH
    body = {"replica_id": -1, "topics": [{"topic": "m", "partitions": [
        {"partition": 0, "current_leader_epoch": epoch + 1, "leader_epoch": epoch}]}]}
    answer = new.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, body)["topics"][0]["partitions"][0]
    assert (answer["leader_epoch"], answer["end_offset"]) == (epoch, 2)


def test_elect_leader_refuses_a_broker_that_holds_no_replica(cluster_factory, wire):
    cluster = cluster_factory(num_brokers=2)
    client = wire(cluster.bootstrap_servers.split(",")[0])
    _create(client, "m", 1)
    leader, _epoch = _settled(lambda: _leaders(client), bool)[0]
    with pytest.raises(InvalidReplicaAssignmentError, match="not a replica"):
        cluster.elect_leader("m", 0, 1 - leader)


def test_metadata_lists_the_replicas_of_a_stopped_broker_as_offline(cluster_factory, wire):
    cluster = cluster_factory(num_brokers=3)
    _create(wire(cluster.bootstrap_servers), "m", 3, replication_factor=3)
    cluster.kill_broker(2)
    survivor = wire(cluster.bootstrap_servers.split(",")[0])
    partitions = _settled(lambda: _partitions(survivor), lambda found: len(found) == 3 and all(
        p["offline_replicas"] == [2] for p in found.values()))
    for partition in partitions.values():
        assert partition["offline_replicas"] == [2]
        assert partition["leader_id"] in (0, 1) and 2 not in partition["isr_nodes"]
        assert sorted(partition["replica_nodes"]) == [0, 1, 2]
    cluster.restart_broker(2)
    partitions = _settled(lambda: _partitions(survivor), lambda found: all(
        p["offline_replicas"] == [] for p in found.values()))
    assert [p["offline_replicas"] for p in partitions.values()] == [[], [], []]


def test_topics_survive_an_embedded_restart(cluster_factory, tmp_path, wire, make_batch,
                                            read_records):
    first = cluster_factory(num_brokers=2, data_dir=tmp_path)
    client = wire(first.bootstrap_servers)
    _create(client, "m", 2)
    leaders = _settled(lambda: _leaders(client), lambda found: len(found) == 2)
    for partition in (0, 1):
        server = first.bootstrap_servers.split(",")[leaders[partition][0]]
        assert _produce(wire(server), make_batch([b"p%d" % partition]), partition)[
            "error_code"] == 0
    cluster_id = first.cluster_id
    first.stop()
    second = cluster_factory(num_brokers=2, data_dir=tmp_path)
    assert second.cluster_id == cluster_id
    assert {i: leader for i, (leader, _e) in _leaders(wire(second.bootstrap_servers)).items()
            } == {i: leader for i, (leader, _e) in leaders.items()}
    for partition in (0, 1):
        server = second.bootstrap_servers.split(",")[leaders[partition][0]]
        records = read_records(_fetch(wire(server), partition)["records"])
        assert [v for _o, _k, v, _t in records] == [b"p%d" % partition]
