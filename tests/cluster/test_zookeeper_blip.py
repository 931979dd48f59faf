"""A ZooKeeper blip that every session survives must not leave brokers deaf: three
``kafkalite-server`` processes with an authorizer and SASL, ZooKeeper restarted for about
3 s, then an ACL revoked and a SCRAM credential deleted through broker 1 stop working on
brokers 2 and 3. (kazoo drops every watch with the connection; the brokers re-arm them and
read again when it comes back. The fault suite's F16 covers leaders and the controller.)"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from polling import until

from kafkalite import AdminClient
from kafkalite.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.sasl_client import SaslCredentials
from tests.conftest import BrokerProcess, WireClient

SESSION_MS = 10_000
"""Longer than the blip: every session survives it."""
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="broker" password="broker-pw" user_broker="broker-pw" '
        'user_alice="alice-pw";')
TOPIC = "guarded"
_until = functools.partial(until, timeout=30, interval=0.2, tolerate=(OSError, KafkaError))


def _settings(connect: str, broker_id: int) -> list[str]:
    settings = {
        "broker.id": str(broker_id), "zookeeper.connect": connect,
        "zookeeper.session.timeout.ms": str(SESSION_MS),
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:broker", "default.replication.factor": "3",
        "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "1"}
    return ["--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
            *(arg for key, value in settings.items() for arg in ("--set", f"{key}={value}"))]


def login(address: str, mechanism: str, user: str, password: str) -> tuple[WireClient, int]:
    """A connection authenticated as ``user`` (error code 0), or the login's error code."""
    client = WireClient(address)
    assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})["error_code"] == 0
    exchange = SaslCredentials(mechanism, user, password).exchange()
    token: bytes | None = exchange.first()
    while token is not None:
        answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        if answer["error_code"]:
            client.close()
            return client, answer["error_code"]
        token = exchange.next(answer["auth_bytes"])
    return client, 0


def topic_error(address: str) -> int:
    """Metadata for the topic as alice: 0 when she may describe it, 29 when not."""
    client, error = login(address, "PLAIN", "alice", "alice-pw")
    assert error == 0
    try:
        answer = client.call(ApiKey.METADATA, 8, {"topics": [{"name": TOPIC}],
                                                  "allow_auto_topic_creation": False})
        return int(answer["topics"][0]["error_code"])
    finally:
        client.close()


def scram_login(address: str) -> int:
    client, error = login(address, "SCRAM-SHA-256", "app", "app-pw")
    client.close()
    return error


@pytest.fixture
def brokers(tmp_path: Path, zookeeper, chroot) -> Iterator[list[BrokerProcess]]:
    started = []
    try:
        for broker_id in (1, 2, 3):
            started.append(BrokerProcess(tmp_path / f"broker-{broker_id}", _settings(
                zookeeper.connect + chroot, broker_id)).start())
        yield started
    finally:
        for broker in started:
            broker.kill()


def test_acl_and_credential_changes_after_a_blip_reach_every_broker(brokers, zookeeper):
    addresses = [b.bootstrap_servers for b in brokers]
    alice_describes = ACL("User:alice", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                          ResourcePattern(ResourceType.TOPIC, TOPIC))
    with AdminClient(bootstrap_servers=addresses[0], security_protocol="SASL_PLAINTEXT",
                     sasl_mechanism="PLAIN", sasl_plain_username="broker",
                     sasl_plain_password="broker-pw") as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 3)])
        admin.create_acls([alice_describes])
        admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("app", "SCRAM-SHA-256", "app-pw")])
        # Every broker has read (and cached) both before the blip.
        for address in addresses:
            _until(lambda a=address: topic_error(a) == 0, f"alice to describe via {address}")
            _until(lambda a=address: scram_login(a) == 0, f"app to log in via {address}")
        zookeeper.stop()
        time.sleep(3)
        zookeeper.start()
        # Revoked and deleted through broker 1 once the brokers are connected again.
        _until(lambda: not admin.delete_acls([ACLFilter(
            "User:alice", None, ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
            ResourcePatternFilter(ResourceType.TOPIC, TOPIC))])[0][2], "the ACL deleted")
        _until(lambda: admin.alter_user_scram_credentials([
            UserScramCredentialDeletion("app", "SCRAM-SHA-256")]) == {"app": None},
            "the credential deleted")
    for address in addresses:
        _until(lambda a=address: topic_error(a) == 29, f"alice refused via {address}")
        _until(lambda a=address: scram_login(a) == 58, f"app's login refused via {address}")
