"""Metadata, CreateTopics, DeleteTopics, CreatePartitions and DescribeConfigs."""

from __future__ import annotations

import time
from typing import Any

from kafkalite.protocol import ApiKey


def create(client, *topics: dict[str, Any], validate_only: bool = False) -> dict[str, Any]:
    full = [{"num_partitions": -1, "replication_factor": -1, "assignments": [], "configs": [],
             **topic} for topic in topics]
    response = client.call(ApiKey.CREATE_TOPICS, 4, {"topics": full, "timeout_ms": 5000,
                                                     "validate_only": validate_only})
    return {t["name"]: (t["error_code"], t["error_message"]) for t in response["topics"]}


def metadata(client, topics: list[str] | None, version: int = 8,
             auto_create: bool = False) -> dict[str, dict[str, Any]]:
    body = {"topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": auto_create}
    return {t["name"]: t for t in client.call(ApiKey.METADATA, version, body)["topics"]}


def test_create_topics_validates_each_topic_on_its_own(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    results = create(
        client,
        {"name": "good", "num_partitions": 3},
        {"name": "bad/name"},
        {"name": "x" * 250},
        {"name": "too-many-replicas", "replication_factor": 2},
        {"name": "zero-partitions", "num_partitions": 0},
        {"name": "bad-config", "configs": [{"name": "retention.msx", "value": "1"}]},
        {"name": "bad-value", "configs": [{"name": "retention.ms", "value": "soon"}]},
    )
    assert results["good"] == (0, None)
    assert results["bad/name"][0] == 17
    assert results["x" * 250][0] == 17
    assert results["too-many-replicas"][0] == 38
    assert results["zero-partitions"][0] == 37
    assert results["bad-config"][0] == 40 and "retention.msx" in results["bad-config"][1]
    assert results["bad-value"][0] == 40 and "retention.ms" in results["bad-value"][1]
    assert create(client, {"name": "good"})["good"][0] == 36
    assert len(metadata(client, ["good"])["good"]["partitions"]) == 3
    assert set(metadata(client, None)) == {"good"}


def test_create_topics_defaults_and_validate_only(cluster_factory, wire):
    cluster = cluster_factory(num_partitions="4")
    client = wire(cluster.bootstrap_servers)
    assert create(client, {"name": "dry"}, validate_only=True)["dry"] == (0, None)
    assert metadata(client, ["dry"])["dry"]["error_code"] == 3
    assert create(client, {"name": "wet"})["wet"] == (0, None)
    assert len(metadata(client, ["wet"])["wet"]["partitions"]) == 4


def _until_led(client, topic: str) -> dict[str, Any]:
    """The topic's Metadata once its leaders are elected (at most ten seconds)."""
    for _attempt in range(200):
        found = metadata(client, [topic])[topic]
        if found["error_code"] == 0:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{topic} got no leader: {found}")


def test_metadata_auto_creates_only_when_allowed(cluster_factory, wire):
    cluster = cluster_factory()
    client = wire(cluster.bootstrap_servers)
    assert metadata(client, ["nope"], auto_create=False)["nope"]["error_code"] == 3
    # As in Kafka: the answer that creates a topic says LEADER_NOT_AVAILABLE (5) until
    # the controller has elected its leaders.
    assert metadata(client, ["auto"], auto_create=True)["auto"]["error_code"] in (0, 5)
    made = _until_led(client, "auto")
    partition = made["partitions"][0]
    assert partition["leader_id"] == 0 and partition["isr_nodes"] == [0]
    # v1-3 have no flag: auto creation follows the broker setting.
    assert metadata(client, ["old-style"], version=1)["old-style"]["error_code"] in (0, 5)
    assert _until_led(client, "old-style")["error_code"] == 0
    assert metadata(client, ["bad name!"], auto_create=True)["bad name!"]["error_code"] == 17
    # v1+: an empty list means no topics, null means all; v0: empty means all.
    assert metadata(client, []) == {}
    assert set(metadata(client, [], version=0)) == {"auto", "old-style"}
    disabled = cluster_factory(auto_create_topics_enable="false")
    other = wire(disabled.bootstrap_servers)
    assert metadata(other, ["auto"], auto_create=True)["auto"]["error_code"] == 3


def test_metadata_describes_brokers_and_cluster(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    response = client.call(ApiKey.METADATA, 8, {"topics": None,
                                                "allow_auto_topic_creation": False})
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    assert response["brokers"] == [{"node_id": 0, "host": host, "port": int(port),
                                    "rack": None}]
    assert response["controller_id"] == 0
    assert response["cluster_id"] == cluster.cluster_id
    assert response["cluster_authorized_operations"] == -(2**31)


def test_delete_topics(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    create(client, {"name": "doomed", "num_partitions": 2})
    response = client.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": ["doomed", "ghost"],
                                                     "timeout_ms": 5000})
    codes = {r["name"]: r["error_code"] for r in response["responses"]}
    assert codes == {"doomed": 0, "ghost": 3}
    assert metadata(client, ["doomed"])["doomed"]["error_code"] == 3
    assert create(client, {"name": "doomed"})["doomed"] == (0, None)


def test_delete_topics_disabled(cluster_factory, wire):
    cluster = cluster_factory(delete_topic_enable="false")
    client = wire(cluster.bootstrap_servers)
    create(client, {"name": "kept"})
    response = client.call(ApiKey.DELETE_TOPICS, 1, {"topic_names": ["kept"],
                                                     "timeout_ms": 5000})
    assert response["responses"][0]["error_code"] == 73


def test_create_partitions(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    create(client, {"name": "grow", "num_partitions": 2})

    def grow(name: str, count: int, validate_only: bool = False) -> int:
        body = {"topics": [{"name": name, "count": count, "assignments": None}],
                "timeout_ms": 5000, "validate_only": validate_only}
        return client.call(ApiKey.CREATE_PARTITIONS, 1, body)["results"][0]["error_code"]

    assert grow("grow", 2) == 37
    assert grow("ghost", 3) == 3
    assert grow("grow", 5, validate_only=True) == 0
    assert len(metadata(client, ["grow"])["grow"]["partitions"]) == 2
    assert grow("grow", 5) == 0
    assert len(metadata(client, ["grow"])["grow"]["partitions"]) == 5


def test_describe_configs_topic_and_broker(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    create(client, {"name": "conf", "configs": [{"name": "retention.ms", "value": "12345"},
                                                {"name": "cleanup.policy", "value": "compact"}]})
    body = {"resources": [
        {"resource_type": 2, "resource_name": "conf", "configuration_keys": None},
        {"resource_type": 2, "resource_name": "ghost", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "0", "configuration_keys": ["num.partitions"]},
    ], "include_synonyms": False, "include_documentation": False}
    topic, ghost, broker = client.call(ApiKey.DESCRIBE_CONFIGS, 3, body)["results"]
    values = {c["name"]: (c["value"], c["config_source"]) for c in topic["configs"]}
    assert values["retention.ms"] == ("12345", 1)
    assert values["cleanup.policy"] == ("compact", 1)
    assert values["segment.bytes"] == (str(1024**3), 5)
    assert ghost["error_code"] == 3
    assert [(c["name"], c["value"]) for c in broker["configs"]] == [("num.partitions", "1")]
    v0 = client.call(ApiKey.DESCRIBE_CONFIGS, 0, body)["results"][0]["configs"]
    assert {c["name"]: c["is_default"] for c in v0}["retention.ms"] is False


def test_metadata_auto_creates_the_offsets_topic_with_its_own_settings(cluster_factory, wire):
    cluster = cluster_factory(offsets_topic_num_partitions="7")
    client = wire(cluster.bootstrap_servers)
    metadata(client, ["__consumer_offsets"], auto_create=True)
    made = _until_led(client, "__consumer_offsets")
    assert made["is_internal"] is True
    assert len(made["partitions"]) == 7
    body = {"resources": [{"resource_type": 2, "resource_name": "__consumer_offsets",
                           "configuration_keys": ["cleanup.policy"]}],
            "include_synonyms": False, "include_documentation": False}
    (result,) = client.call(ApiKey.DESCRIBE_CONFIGS, 3, body)["results"]
    assert [(c["name"], c["value"]) for c in result["configs"]] == [("cleanup.policy", "compact")]
