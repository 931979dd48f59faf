"""Security in a cluster of ``kafkalite-server`` processes over a real ZooKeeper: a SCRAM
user bootstrapped into ``/config/users`` with ``kafkalite-server scram-user``, ACLs written
through one broker under ``/kafka-acl`` and enforced by the other at once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kafkalite import AdminClient, Producer
from kafkalite.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    NewTopic,
    ResourcePattern,
    ResourceType,
)
from kafkalite.errors import KafkaTimeoutError
from kafkalite.protocol.errors import TopicAuthorizationFailedError
from tests.cluster.zookeeper_server import ZooKeeperServer
from tests.conftest import REPO_ROOT, BrokerProcess


def sasl_address(broker: BrokerProcess) -> str:
    """From the ``listener NAME (PROTOCOL) on host:port`` lines after ``listening on``."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in list(broker.output):
            if line.startswith("listener SASL_PLAINTEXT (SASL_PLAINTEXT) on "):
                return line.split()[-1]
        time.sleep(0.05)
    raise AssertionError(f"no SASL_PLAINTEXT listener line in {broker.output}")


def scram(address: str, user: str, password: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap_servers": address, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": user,
            "sasl_plain_password": password, **extra}


def test_scram_users_and_acls_live_in_zookeeper(tmp_path: Path,
                                                zookeeper: ZooKeeperServer) -> None:
    connect = zookeeper.connect + "/secure"
    settings = ["--set", f"zookeeper.connect={connect}"]
    for user in ("admin", "app"):
        done = subprocess.run([sys.executable, "-m", "kafkalite_server", "scram-user",
                               "--data-dir", str(tmp_path / "tool"), "--user", user,
                               "--password", f"{user}-pw", *settings],
                              capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
        assert done.returncode == 0, done.stderr
    zk = KazooClient(hosts=connect)
    zk.start(timeout=10)
    brokers: list[BrokerProcess] = []
    try:
        stored = json.loads(zk.get("/config/users/app")[0])["config"]["SCRAM-SHA-256"]
        assert stored.startswith("salt=") and "app-pw" not in stored
        for broker_id in (1, 2):
            brokers.append(BrokerProcess(tmp_path / f"broker-{broker_id}", [
                *settings, "--set", f"broker.id={broker_id}",
                "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
                "--set", "sasl.enabled.mechanisms=SCRAM-SHA-256",
                # The brokers log in to each other as admin (a super user), over SCRAM.
                "--set", "security.inter.broker.protocol=SASL_PLAINTEXT",
                "--set", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256",
                "--set", "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config="
                         "org.apache.kafka.common.security.scram.ScramLoginModule required "
                         'username="admin" password="admin-pw";',
                "--set", "authorizer.class.name=on",
                "--set", "super.users=User:admin"]).start())
        first, second = (sasl_address(b) for b in brokers)
        with AdminClient(**scram(first, "admin", "admin-pw")) as admin:
            admin.create_topics([NewTopic("zk-orders", 1, 1)])
            # Broker 2 reads (and caches) the ACLs: none yet, so app is refused ...
            early = Producer(**scram(second, "app", "app-pw", max_block_ms=5000))
            with pytest.raises(TopicAuthorizationFailedError):
                early.send("zk-orders", b"too early").get(15)
            early.close()
            admin.create_acls([ACL("User:app", "*", ACLOperation.WRITE,
                                   ACLPermissionType.ALLOW,
                                   ResourcePattern(ResourceType.TOPIC, "zk-orders"))])
        node = json.loads(zk.get("/kafka-acl/Topic/zk-orders")[0])
        assert node["acls"] == [{"principal": "User:app", "permissionType": "Allow",
                                 "operation": "Write", "host": "*"}]
        # ... and learns of the new ACL through the change notification's watch.
        deadline = time.monotonic() + 30
        while True:
            producer = Producer(**scram(second, "app", "app-pw", max_block_ms=5000))
            try:
                producer.send("zk-orders", b"via broker 2").get(15)
                break
            except (KafkaTimeoutError, TopicAuthorizationFailedError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
            finally:
                producer.close()
        denied = Producer(**scram(second, "app", "app-pw", max_block_ms=5000))
        with pytest.raises(TopicAuthorizationFailedError):
            denied.send("zk-elsewhere", b"x").get(15)
        denied.close()
    finally:
        for broker in brokers:
            broker.terminate()
        zk.stop()
        zk.close()
