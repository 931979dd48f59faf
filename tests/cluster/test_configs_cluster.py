"""Config APIs in a cluster over the coordination backend (in-memory here; the same code
runs over ZooKeeper in test_configs_zookeeper.py): topic configs in
``/config/topics/<t>``, dynamic broker configs in ``/config/brokers/<id>`` and
``/config/brokers/<default>``, and the ``/config/changes`` notifications every broker
follows to update its logs."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from polling import until

from kafkalite.admin import AdminClient, NewTopic
from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster

WAIT_S = 20
TOPIC, BROKER = 2, 4
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT = 1, 2, 3


_until = functools.partial(until, timeout=WAIT_S, interval=0.02)


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=3, config={
            "controlled.shutdown.retry.backoff.ms": "50",
            "controlled.shutdown.max.retries": "1"}) as started:
        with AdminClient(started.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("cfg", 3, 1)], wait_for_metadata=True)
        yield started


def _address(cluster: EmbeddedCluster, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker(broker_id).port}"


def _incremental(wire: Any, address: str, kind: int, name: str,
                 edits: list[tuple[str, int, str | None]]) -> dict[str, Any]:
    body = {"resources": [{"resource_type": kind, "resource_name": name, "configs": [
        {"name": key, "config_operation": op, "value": value} for key, op, value in edits]}],
        "validate_only": False}
    return wire(address).call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]


def _describe(wire: Any, address: str, kind: int, name: str) -> dict[str, dict[str, Any]]:
    body = {"resources": [{"resource_type": kind, "resource_name": name,
                           "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}
    result = wire(address).call(ApiKey.DESCRIBE_CONFIGS, 3, body)["results"][0]
    assert result["error_code"] == 0, result
    return {entry["name"]: entry for entry in result["configs"]}


def _node(cluster: EmbeddedCluster, path: str) -> Any:
    assert cluster.ensemble is not None
    store = cluster.ensemble.connect()
    try:
        return json.loads(store.get(path)[0])
    finally:
        store.close()


def _log_configs(cluster: EmbeddedCluster, topic: str) -> dict[int, Any]:
    return {broker.node_id: partition.log.config
            for broker in cluster.brokers
            for (name, _index), partition in broker.replica_manager.partitions.items()
            if name == topic}


def test_a_topic_config_change_reaches_every_brokers_logs(cluster, wire):
    answer = _incremental(wire, _address(cluster, 0), TOPIC, "cfg",
                          [("max.message.bytes", 0, "2000")])
    assert answer["error_code"] == 0, answer
    assert _node(cluster, "/config/topics/cfg") == {"version": 1,
                                                    "config": {"max.message.bytes": "2000"}}
    notices = [_node(cluster, f"/config/changes/{name}")
               for name in _children(cluster, "/config/changes")]
    assert {"version": 2, "entity_path": "topics/cfg"} in notices
    assert len(_log_configs(cluster, "cfg")) == 3  # one partition led by each broker
    _until(lambda: all(c.max_message_bytes == 2000
                       for c in _log_configs(cluster, "cfg").values()), "the new config")
    entry = _describe(wire, _address(cluster, 2), TOPIC, "cfg")["max.message.bytes"]
    assert (entry["value"], entry["config_source"]) == ("2000", TOPIC_CONFIG)
    # DELETE returns the key to its default everywhere.
    _incremental(wire, _address(cluster, 1), TOPIC, "cfg", [("max.message.bytes", 1, None)])
    _until(lambda: all(c.max_message_bytes == 1024 * 1024 + 12
                       for c in _log_configs(cluster, "cfg").values()), "the default")


def _children(cluster: EmbeddedCluster, path: str) -> list[str]:
    assert cluster.ensemble is not None
    store = cluster.ensemble.connect()
    try:
        return store.children(path)
    finally:
        store.close()


def test_cluster_wide_and_per_broker_dynamic_configs(cluster, wire):
    answer = _incremental(wire, _address(cluster, 1), BROKER, "",
                          [("log.retention.ms", 0, "123456")])
    assert answer["error_code"] == 0, answer
    assert _node(cluster, "/config/brokers/<default>")["config"] == {
        "log.retention.ms": "123456"}
    _until(lambda: all(c.retention_ms == 123456
                       for c in _log_configs(cluster, "cfg").values()), "the new default")
    described = _describe(wire, _address(cluster, 0), TOPIC, "cfg")["retention.ms"]
    assert (described["value"], described["config_source"]) == ("123456", DYNAMIC_DEFAULT)
    # A broker's own layer wins over the cluster-wide one, on that broker only.
    answer = _incremental(wire, _address(cluster, 2), BROKER, "2",
                          [("log.retention.ms", 0, "777")])
    assert answer["error_code"] == 0, answer
    assert _node(cluster, "/config/brokers/2")["config"] == {"log.retention.ms": "777"}
    _until(lambda: _log_configs(cluster, "cfg")[2].retention_ms == 777, "broker 2's value")
    assert {b: c.retention_ms for b, c in _log_configs(cluster, "cfg").items()} == {
        0: 123456, 1: 123456, 2: 777}
    own = _describe(wire, _address(cluster, 2), BROKER, "2")["log.retention.ms"]
    assert (own["value"], own["config_source"]) == ("777", DYNAMIC_BROKER)
    # A restarted broker reads the layers back from the coordination service.
    cluster.stop_broker(2)
    cluster.restart_broker(2)
    _until(lambda: _log_configs(cluster, "cfg").get(2) is not None, "broker 2 leading again")
    assert _log_configs(cluster, "cfg")[2].retention_ms == 777


def test_bad_changes_are_refused_by_name(cluster, wire):
    bad = _incremental(wire, _address(cluster, 0), TOPIC, "cfg",
                       [("max.message.bytes", 0, "lots")])
    assert bad["error_code"] == 40 and "max.message.bytes" in bad["error_message"]
    unknown = _incremental(wire, _address(cluster, 0), TOPIC, "nope",
                           [("retention.ms", 0, "1")])
    assert unknown["error_code"] == 3
    static = _incremental(wire, _address(cluster, 0), BROKER, "0",
                          [("broker.id", 0, "5")])
    assert static["error_code"] == 40 and "broker.id" in static["error_message"]
    internal = _incremental(wire, _address(cluster, 0), BROKER, "",
                            [("log.cleanup.policy", 0, "delete")])
    assert internal["error_code"] == 0  # no __consumer_offsets yet: nothing to protect


def test_a_broker_whose_session_expired_still_hears_of_changes(cluster, wire):
    cluster.expire_session(2)
    _until(lambda: cluster.broker(0).metadata_cache.brokers.keys() == {0, 1, 2},
           "broker 2 registered again")
    answer = _incremental(wire, _address(cluster, 0), TOPIC, "cfg",
                          [("retention.ms", 0, "4242")])
    assert answer["error_code"] == 0, answer
    _until(lambda: all(c.retention_ms == 4242
                       for c in _log_configs(cluster, "cfg").values()), "the change")
