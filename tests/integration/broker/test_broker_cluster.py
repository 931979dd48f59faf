"""Multi-broker EmbeddedCluster: placement, shared metadata, moving a partition leader."""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import ApiKey


def _create(client, name: str, partitions: int) -> None:
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
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


def _leaders(client) -> dict[int, tuple[int, int]]:
    body = {"topics": [{"name": "m"}], "allow_auto_topic_creation": False}
    topic = client.call(ApiKey.METADATA, 8, body)["topics"][0]
    return {p["partition_index"]: (p["leader_id"], p["leader_epoch"])
            for p in topic["partitions"]}


def test_partition_i_is_led_by_broker_i_mod_n_and_all_brokers_agree(cluster_factory, wire):
    cluster = cluster_factory(num_brokers=3)
    clients = [wire(server) for server in cluster.bootstrap_servers.split(",")]
    _create(clients[1], "m", 7)
    views = [_leaders(client) for client in clients]
    assert views[0] == views[1] == views[2]
    assert {i: leader for i, (leader, _epoch) in views[0].items()} == {i: i % 3 for i in range(7)}
    brokers = clients[0].call(ApiKey.METADATA, 1, {"topics": []})["brokers"]
    assert sorted(b["node_id"] for b in brokers) == [0, 1, 2]


def test_produce_to_a_non_leader_is_refused(cluster_factory, wire, make_batch):
    cluster = cluster_factory(num_brokers=2)
    first, second = (wire(server) for server in cluster.bootstrap_servers.split(","))
    _create(first, "m", 2)
    assert _produce(first, make_batch([b"x"]), partition=1)["error_code"] == 6
    assert _produce(second, make_batch([b"x"]), partition=1)["error_code"] == 0
    assert _fetch(first, 1)["error_code"] == 6


def test_move_partition_leader(cluster_factory, wire, make_batch, read_records):
    cluster = cluster_factory(num_brokers=2)
    old, new = (wire(server) for server in cluster.bootstrap_servers.split(","))
    _create(old, "m", 1)
    assert _produce(old, make_batch([b"before", b"move"]), partition=0)["base_offset"] == 0
    moved = cluster.move_partition_leader("m", 0, 1)
    assert (moved.leader, moved.leader_epoch) == (1, 1)
    assert _leaders(old)[0] == (1, 1) == _leaders(new)[0]
    assert _produce(old, make_batch([b"lost"]), partition=0)["error_code"] == 6
    assert _fetch(old, 0)["error_code"] == 6
    assert _produce(new, make_batch([b"after"]), partition=0)["base_offset"] == 2
    fetched = _fetch(new, 0)
    assert [v for _o, _k, v, _t in read_records(fetched["records"])] == [
        b"before", b"move", b"after"]
    assert _fetch(new, 0, epoch=0)["error_code"] == 74  # FENCED_LEADER_EPOCH
    body = {"replica_id": -1, "topics": [{"topic": "m", "partitions": [
        {"partition": 0, "current_leader_epoch": 1, "leader_epoch": 0}]}]}
    answer = new.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, body)["topics"][0]["partitions"][0]
    assert (answer["leader_epoch"], answer["end_offset"]) == (0, 2)


def test_topics_survive_an_embedded_restart(cluster_factory, tmp_path, wire, make_batch,
                                            read_records):
    first = cluster_factory(num_brokers=2, data_dir=tmp_path)
    client = wire(first.bootstrap_servers)
    _create(client, "m", 2)
    for partition in (0, 1):
        server = first.bootstrap_servers.split(",")[partition]
        assert _produce(wire(server), make_batch([b"p%d" % partition]), partition)[
            "error_code"] == 0
    cluster_id = first.controller.image.cluster_id
    first.stop()
    second = cluster_factory(num_brokers=2, data_dir=tmp_path)
    assert second.controller.image.cluster_id == cluster_id
    for partition in (0, 1):
        server = second.bootstrap_servers.split(",")[partition]
        records = read_records(_fetch(wire(server), partition)["records"])
        assert [v for _o, _k, v, _t in records] == [b"p%d" % partition]
