"""SASL OAUTHBEARER on the broker: confluent-kafka (librdkafka's unsecured JWT),
kafka-python and the kafkalite SDK (a token provider) log in, ACLs apply to the token's subject, refused tokens
get Kafka's JSON error, and a validator class plugs in per listener."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import SaslAuthenticationFailedError
from kafkalite.protocol.sasl_oauthbearer import client_response, unsecured_token
from kafkalite_server import EmbeddedCluster
from tests.conftest import WireClient

OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
CONFIG = {
    "listeners": "UNSECURED://127.0.0.1:0,SCOPED://127.0.0.1:0,CUSTOM://127.0.0.1:0,"
                 "PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "UNSECURED:SASL_PLAINTEXT,SCOPED:SASL_PLAINTEXT,"
                                      "CUSTOM:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "OAUTHBEARER",
    "listener.name.scoped.oauthbearer.sasl.jaas.config":
        f'{OAUTH_MODULE} required unsecuredValidatorRequiredScope="kafka.write";',
    "listener.name.custom.oauthbearer.sasl.jaas.config":
        f'{OAUTH_MODULE} required secret="s3cret";',
    "listener.name.custom.oauthbearer.sasl.server.callback.handler.class":
        "tests.security.oauth_validator:SharedSecretValidator",
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:admin",
    "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
}
TIMEOUT_S = 20
SASL_AUTHENTICATION_FAILED = SaslAuthenticationFailedError.errno


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=CONFIG) as cluster:
        yield cluster


def address(cluster: EmbeddedCluster, listener: str = "UNSECURED") -> str:
    return cluster.brokers[0].address(listener)


def token_for(sub: str, lifetime_s: int = 3600, **claims: Any) -> str:
    now = int(time.time())
    return unsecured_token({"sub": sub, "iat": now, "exp": now + lifetime_s, **claims})


def kafka_python_settings(cluster: EmbeddedCluster, sub: str) -> dict[str, Any]:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(AbstractTokenProvider):
        def token(self) -> str:
            return token_for(sub)

    return {"bootstrap_servers": address(cluster), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": Provider()}


def test_confluent_kafka_produces_and_consumes_with_an_unsecured_token(
        cluster: EmbeddedCluster) -> None:
    from confluent_kafka import Consumer, Producer

    conf = {"bootstrap.servers": address(cluster), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=admin"}
    topic = f"oauth-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    for index in range(3):
        producer.produce(topic, f"v{index}".encode())
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer({**conf, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(values) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    assert values == [b"v0", b"v1", b"v2"]
    scoped = Producer({**conf, "bootstrap.servers": address(cluster, "SCOPED"),
                       "sasl.oauthbearer.config": "principal=admin scope=kafka.write"})
    assert scoped.list_topics(timeout=TIMEOUT_S).topics[topic].error is None


def test_kafka_python_logs_in_and_acls_apply_to_the_tokens_subject(
        cluster: EmbeddedCluster) -> None:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        NewTopic,
        ResourcePattern,
        ResourceType,
    )
    from kafka.errors import TopicAuthorizationFailedError

    topic = f"oauth-acl-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(**kafka_python_settings(cluster, "admin"))
    producer = KafkaProducer(**kafka_python_settings(cluster, "alice"), max_block_ms=5000,
                             enable_idempotence=False, acks=1)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(topic, b"denied").get(TIMEOUT_S)
        for operation in (ACLOperation.WRITE, ACLOperation.DESCRIBE):
            admin.create_acls([ACL("User:alice", "*", operation, ACLPermissionType.ALLOW,
                                   ResourcePattern(ResourceType.TOPIC, topic))])
        deadline = time.monotonic() + TIMEOUT_S
        while True:  # the ACL reaches the broker's cache through the store
            try:
                assert producer.send(topic, b"allowed").get(TIMEOUT_S).offset == 0
                break
            except TopicAuthorizationFailedError:
                assert time.monotonic() < deadline, "the ACL never applied"
                time.sleep(0.1)
    finally:
        producer.close()
        admin.close()


class Tokens:
    def __init__(self, make: Any) -> None:
        self.make = make

    def token(self) -> str:
        return str(self.make())

    def extensions(self) -> dict[str, str]:
        return {"traceId": "abc"}


def test_the_kafkalite_sdk_logs_in_with_a_token_provider(cluster: EmbeddedCluster) -> None:
    from kafkalite import AdminClient, Producer
    from kafkalite.admin import NewTopic

    settings = {"bootstrap_servers": address(cluster), "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "OAUTHBEARER"}
    topic = f"oauth-sdk-{uuid.uuid4().hex[:8]}"
    with AdminClient(**settings, sasl_oauth_token_provider=Tokens(lambda: token_for("admin"))
                     ) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
    producer = Producer(**settings, sasl_oauth_token_provider=Tokens(lambda: token_for("admin")))
    try:
        assert producer.send(topic, b"hello").get(TIMEOUT_S).offset == 0
    finally:
        producer.close()
    refused = Producer(**settings, max_block_ms=3000, sasl_oauth_token_provider=Tokens(
        lambda: token_for("admin", lifetime_s=-10)))
    try:
        with pytest.raises(SaslAuthenticationFailedError, match="invalid_token"):
            refused.send(topic, b"no").get(TIMEOUT_S)
    finally:
        refused.close()


def exchange(cluster: EmbeddedCluster, listener: str, message: bytes
             ) -> tuple[WireClient, dict[str, Any]]:
    client = WireClient(address(cluster, listener), timeout=10)
    handshake = client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
    assert handshake["error_code"] == 0
    return client, client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": message})


def refused(client: WireClient, answer: dict[str, Any]) -> dict[str, Any]:
    """The JSON challenge, after checking the acknowledgement fails and closes."""
    assert answer["error_code"] == 0
    error = json.loads(answer["auth_bytes"])
    final = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
    assert final["error_code"] == SASL_AUTHENTICATION_FAILED
    assert final["error_message"].startswith("Authentication failed: {")
    assert client.is_closed_by_peer()
    return error


def accepted(client: WireClient, answer: dict[str, Any]) -> None:
    assert (answer["error_code"], answer["auth_bytes"]) == (0, b"")
    assert "brokers" in client.call(ApiKey.METADATA, 8, {
        "topics": [], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})
    client.close()


def test_an_expired_token_gets_kafkas_json_error_then_the_exchange_fails(
        cluster: EmbeddedCluster) -> None:
    client, answer = exchange(cluster, "UNSECURED",
                              client_response(token_for("alice", lifetime_s=-10)))
    assert refused(client, answer) == {"status": "invalid_token"}


def test_a_listener_can_require_a_scope(cluster: EmbeddedCluster) -> None:
    client, answer = exchange(cluster, "SCOPED", client_response(token_for("alice")))
    assert refused(client, answer) == {"status": "insufficient_scope", "scope": "kafka.write"}
    accepted(*exchange(cluster, "SCOPED", client_response(
        token_for("alice", scope="kafka.read kafka.write"))))


def test_a_validator_class_decides_on_its_listener(cluster: EmbeddedCluster) -> None:
    accepted(*exchange(cluster, "CUSTOM", client_response("s3cret.bob")))
    client, answer = exchange(cluster, "CUSTOM", client_response("guess.bob"))
    assert refused(client, answer) == {"status": "invalid_token"}
    client, answer = exchange(cluster, "CUSTOM", client_response(token_for("bob")))
    assert refused(client, answer) == {"status": "invalid_token"}
