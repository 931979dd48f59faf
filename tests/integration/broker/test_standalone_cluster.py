"""A standalone ``kafkalite-server`` is a one-broker cluster: it says that it is the
controller, keeps its metadata in the coordination store of its data dir (which no second
process may open meanwhile), and refuses more replicas than it has brokers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import InvalidReplicationFactorError

REPO_ROOT = Path(__file__).resolve().parents[3]


def _create(client, name: str, replication_factor: int) -> dict:
    body = {"topics": [{"name": name, "num_partitions": 1,
                        "replication_factor": replication_factor, "assignments": [],
                        "configs": []}],
            "timeout_ms": 5000, "validate_only": False}
    return client.call(ApiKey.CREATE_TOPICS, 4, body)["topics"][0]


def test_a_standalone_broker_is_the_controller_of_its_cluster_of_one(
        broker_process_factory, wire):
    broker = broker_process_factory()
    assert "broker 0 is the controller (epoch 1)" in broker.log_text()
    assert (broker.data_dir / "cluster-metadata" / "journal-0").exists()
    client = wire(broker.bootstrap_servers)
    metadata = client.call(ApiKey.METADATA, 8, {
        "topics": None, "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})
    assert metadata["controller_id"] == 0
    assert [b["node_id"] for b in metadata["brokers"]] == [0]

    refused = _create(client, "two-copies", 2)
    assert refused["error_code"] == InvalidReplicationFactorError.errno
    assert "larger than the 1 available brokers" in refused["error_message"]
    assert _create(client, "one-copy", 1)["error_code"] == 0

    broker.restart()  # the controller's epoch goes on from the store
    assert "broker 0 is the controller (epoch 2)" in broker.log_text()


def test_scram_user_refuses_a_store_its_broker_holds(broker_process_factory):
    broker = broker_process_factory()
    result = subprocess.run(
        [sys.executable, "-m", "kafkalite_server", "scram-user", "--data-dir",
         str(broker.data_dir), "--user", "late", "--password", "late-secret"],
        capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert result.returncode == 1
    store = broker.data_dir / "cluster-metadata"
    assert result.stderr.strip() == (
        f"kafkalite-server: the coordination store in {store} is open in another process "
        "(a broker running on this data dir?)")
