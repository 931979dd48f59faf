"""Upgrading a standalone broker: today's ``kafkalite-server start`` on a data dir written by
kafkalite 0.1 (``tests/data/standalone-0.1.0``, see its README) imports the old metadata
files into its coordination store once, and serves everything they held.

Checked through real clients over a real broker process: topics with their partition
counts, configs and leader epochs, the records, the group's committed offset, the ACL (in
force: alice may read ``orders``, not write it), a SCRAM login as alice, the dynamic broker
config, and a new idempotent producer's id past the old block. A second start does not
import again: what changed since the import survives, and the old files are untouched.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.protocol import ApiKey

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_module = pytest.importorskip("confluent_kafka.admin")

REPO_ROOT = Path(__file__).resolve().parents[3]
RELEASE_DIR = REPO_ROOT / "tests" / "data" / "standalone-0.1.0"
OLD_FILES = ("cluster-metadata.json", "security-metadata.json", "producer-id-block",
             "dynamic-broker-configs.json")
SETTINGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    # The test inspects everything over PLAINTEXT as a super user; alice logs in with SCRAM.
    "super.users": "User:ANONYMOUS", "kafkalite.allow.anonymous.super.user": "true",
    "group.initial.rebalance.delay.ms": "0",
    # offsets.topic.num.partitions is left at its default (50) although the release's
    # broker made __consumer_offsets with 2: the topic's real count places the groups.
}
ALICE = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-256",
         "sasl.username": "alice", "sasl.password": "alice-secret"}
TIMEOUT_S = 30


class Broker:
    """``python -m kafkalite_server start`` with :data:`SETTINGS`; ``address`` per listener."""

    def __init__(self, data_dir: Path) -> None:
        args = [sys.executable, "-m", "kafkalite_server", "start", "--data-dir", str(data_dir)]
        for key, value in SETTINGS.items():
            args += ["--set", f"{key}={value}"]
        self.log_path = data_dir.with_name("broker.log")
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log,
                                            text=True, cwd=REPO_ROOT)
        assert self.process.stdout is not None
        lines = [self.process.stdout.readline() for _ in range(3)]
        if not lines[0].startswith("listening on "):
            self.process.kill()
            raise AssertionError(f"the broker did not start: {lines} {self.log_text()}")
        self.address = {line.split()[1]: line.split()[-1] for line in lines[1:]}

    def log_text(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=TIMEOUT_S)
        assert self.process.returncode == 0, self.log_text()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A copy of the release's data dir, with one leader epoch raised so that the test can
    tell an imported epoch from one started over."""
    data = tmp_path / "data"
    shutil.copytree(RELEASE_DIR, data)
    (data / "README.md").unlink()
    metadata = json.loads((data / "cluster-metadata.json").read_text())
    metadata["topics"]["orders"]["partitions"][1]["leader_epoch"] = 7
    (data / "cluster-metadata.json").write_text(json.dumps(metadata, indent=1))
    return data


@pytest.fixture
def started(data_dir: Path) -> Iterator[list[Broker]]:
    brokers: list[Broker] = []
    yield brokers
    for broker in brokers:
        if broker.process.poll() is None:
            broker.process.kill()
            broker.process.communicate()


def _admin(broker: Broker) -> Any:
    return admin_module.AdminClient({"bootstrap.servers": broker.address["PLAINTEXT"]})


def _topic_configs(admin: Any, name: str) -> dict[str, str]:
    resource = admin_module.ConfigResource(admin_module.ResourceType.TOPIC, name)
    entries = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    topic_source = confluent_kafka.admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    return {key: entry.value for key, entry in entries.items()
            if entry.source == topic_source}


def _broker_config(admin: Any, key: str) -> str:
    resource = admin_module.ConfigResource(admin_module.ResourceType.BROKER, "0")
    return admin.describe_configs([resource])[resource].result(TIMEOUT_S)[key].value


def _read(address: str, topic: str, partitions: int, expected: int) -> list[str]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": address, "group.id": "reader",
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                     for p in range(partitions)])
    values: list[str] = []
    for _ in range(200):  # bounded: the records are there, or the test fails
        if len(values) >= expected:
            break
        message = consumer.poll(0.2)
        if message is not None:
            assert message.error() is None, message.error()
            values.append(message.value().decode())
    consumer.close()
    return values


def _leader_epochs(wire: Any, address: str, topic: str) -> dict[int, int]:
    client = wire(address)
    body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}
    found = client.call(ApiKey.METADATA, 8, body)["topics"][0]["partitions"]
    return {p["partition_index"]: p["leader_epoch"] for p in found}


def test_the_first_start_imports_the_old_metadata_once_and_serves_it(data_dir, started, wire):
    old = {name: (data_dir / name).read_bytes() for name in OLD_FILES}
    broker = Broker(data_dir)
    started.append(broker)
    plain = broker.address["PLAINTEXT"]
    admin = _admin(broker)

    topics = admin.list_topics(timeout=TIMEOUT_S).topics
    assert {name: len(t.partitions) for name, t in topics.items()} == {
        "orders": 3, "events": 1, "__consumer_offsets": 2}
    assert _topic_configs(admin, "orders") == {"cleanup.policy": "compact",
                                               "min.compaction.lag.ms": "5"}
    assert _topic_configs(admin, "events") == {"retention.ms": "86400000"}
    assert _broker_config(admin, "log.retention.ms") == "172800000"
    assert _leader_epochs(wire, plain, "orders") == {0: 0, 1: 7, 2: 0}

    orders = _read(plain, "orders", 3, 30)
    assert sorted(orders) == sorted(f"order-{i}" for i in range(30))
    assert _read(plain, "events", 1, 10) == [f"event-{i}" for i in range(10)]
    committed = admin.list_consumer_group_offsets(
        [confluent_kafka.ConsumerGroupTopicPartitions("billing")])["billing"].result(TIMEOUT_S)
    assert [(tp.topic, tp.partition, tp.offset) for tp in committed.topic_partitions] == [
        ("events", 0, 10)]

    acls = admin.describe_acls(admin_module.AclBindingFilter(
        admin_module.ResourceType.ANY, None, admin_module.ResourcePatternType.ANY, None, None,
        admin_module.AclOperation.ANY, admin_module.AclPermissionType.ANY)).result(TIMEOUT_S)
    assert [(a.name, a.principal, a.operation.name, a.permission_type.name) for a in acls] == [
        ("orders", "User:alice", "READ", "ALLOW")]
    sasl = broker.address["SASL_PLAINTEXT"]
    alice = [arg for key, value in ALICE.items() for arg in ("-X", f"{key}={value}")]
    read = subprocess.run(["kcat", "-b", sasl, "-C", "-t", "orders", "-o", "beginning", "-e",
                           "-q", *alice], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert sorted(read.stdout.split()) == sorted(orders), read.stderr  # SCRAM, and the ACL
    refused = confluent_kafka.Producer({"bootstrap.servers": sasl, **ALICE})
    outcome: list[Any] = []
    refused.produce("orders", b"not allowed", on_delivery=lambda err, _m: outcome.append(err))
    refused.flush(TIMEOUT_S)
    assert outcome and outcome[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED

    producer_id = wire(plain).call(ApiKey.INIT_PRODUCER_ID, 1, {
        "transactional_id": None, "transaction_timeout_ms": 60000})
    assert producer_id["error_code"] == 0 and producer_id["producer_id"] >= 1000

    # Changes after the import ...
    admin.create_topics([admin_module.NewTopic("after-import", 2, 1)])["after-import"].result(
        TIMEOUT_S)
    resource = admin_module.ConfigResource(
        admin_module.ResourceType.TOPIC, "events", incremental_configs=[admin_module.ConfigEntry(
            "retention.ms", "3600000",
            incremental_operation=admin_module.AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)
    broker.stop()
    assert "imported cluster-metadata.json, security-metadata.json" in broker.log_text()

    # ... survive the next start, which imports nothing.
    again = Broker(data_dir)
    started.append(again)
    admin = _admin(again)
    topics = admin.list_topics(timeout=TIMEOUT_S).topics
    assert len(topics["after-import"].partitions) == 2
    assert _topic_configs(admin, "events") == {"retention.ms": "3600000"}
    assert _leader_epochs(wire, again.address["PLAINTEXT"], "orders")[1] == 7
    assert again.log_text().count("imported cluster-metadata.json") == 1
    assert {name: (data_dir / name).read_bytes() for name in OLD_FILES} == old
    again.stop()
