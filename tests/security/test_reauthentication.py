"""KIP-368 on a running broker (connections.max.reauth.ms of a few seconds):
confluent-kafka, kafka-python and the kafkalite SDK keep producing across several
re-authentications with PLAIN, SCRAM and OAUTHBEARER, a client that does not re-authenticate is closed at its next
request after the lifetime, and re-authenticating as another principal is refused."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import SaslAuthenticationFailedError
from kafkalite.protocol.sasl_oauthbearer import unsecured_token
from kafkalite.protocol.sasl_plain import plain_message
from kafkalite_server import EmbeddedCluster
from tests.conftest import WireClient
from tests.security.conftest import add_scram_user

LIFETIME_MS = 2500
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SCRAM = ("sue", "sue-secret")
CONFIG = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in USERS.items()) + ";",
    "connections.max.reauth.ms": str(LIFETIME_MS),
    "offsets.topic.num.partitions": "1",
}
RUN_S = 2.4 * LIFETIME_MS / 1000
"""Long enough for two re-authentications of every connection."""
EXPIRED = "its SASL session expired"
REAUTHENTICATED = "re-authenticated with"


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=CONFIG) as cluster:
        add_scram_user(cluster, *SCRAM)
        yield cluster


def address(cluster: EmbeddedCluster) -> str:
    return cluster.brokers[0].address("SASL_PLAINTEXT")


@pytest.fixture
def broker_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="kafkalite_server.handlers.sasl")
    caplog.set_level(logging.DEBUG, logger="kafkalite_server.network.connection")
    return caplog


def lines(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in record.getMessage() for record in caplog.records)


def produce_for_a_while(send: Any, flush: Any) -> int:
    sent = 0
    deadline = time.monotonic() + RUN_S
    while time.monotonic() < deadline:
        send(f"m{sent}".encode())
        sent += 1
        time.sleep(0.05)
    flush()
    return sent


@pytest.mark.parametrize("mechanism", ["PLAIN", "OAUTHBEARER"])
def test_confluent_kafka_keeps_producing_across_re_authentications(
        cluster: EmbeddedCluster, broker_log: pytest.LogCaptureFixture, mechanism: str) -> None:
    from confluent_kafka import Producer

    conf: dict[str, Any] = {"bootstrap.servers": address(cluster),
                            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism}
    if mechanism == "PLAIN":
        conf.update({"sasl.username": "alice", "sasl.password": USERS["alice"]})
    else:
        conf.update({"enable.sasl.oauthbearer.unsecure.jwt": True,
                     "sasl.oauthbearer.config": "principal=alice"})
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    delivered: list[object] = []
    producer = Producer({**conf, "linger.ms": 0,
                         "on_delivery": lambda err, msg: delivered.append(err)})

    def send(value: bytes) -> None:
        producer.produce(topic, value)
        producer.poll(0)

    sent = produce_for_a_while(send, lambda: producer.flush(20))
    assert delivered == [None] * sent
    assert lines(broker_log, REAUTHENTICATED) >= 2
    assert lines(broker_log, EXPIRED) == 0


def test_kafka_python_keeps_producing_across_scram_re_authentications(
        cluster: EmbeddedCluster, broker_log: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=address(cluster),
                             security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=SCRAM[0],
                             sasl_plain_password=SCRAM[1], linger_ms=0)
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    futures = []
    try:
        sent = produce_for_a_while(lambda value: futures.append(producer.send(topic, value)),
                                   lambda: producer.flush(20))
        assert [future.get(10).offset for future in futures] == list(range(sent))
    finally:
        producer.close()
    assert lines(broker_log, REAUTHENTICATED) >= 2
    assert lines(broker_log, EXPIRED) == 0


class Tokens:
    """An unsecured token for ``sub``, made afresh at each login."""

    def __init__(self, sub: str) -> None:
        self.sub = sub
        self.issued = 0

    def token(self) -> str:
        self.issued += 1
        now = int(time.time())
        return unsecured_token({"sub": self.sub, "iat": now, "exp": now + 3600})


def test_the_kafkalite_sdk_re_authenticates_before_its_session_ends(
        cluster: EmbeddedCluster, broker_log: pytest.LogCaptureFixture) -> None:
    from kafkalite import Producer

    tokens = Tokens("alice")
    producer = Producer(bootstrap_servers=address(cluster), security_protocol="SASL_PLAINTEXT",
                        sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=tokens,
                        linger_ms=0)
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    futures = []
    try:
        sent = produce_for_a_while(lambda value: futures.append(producer.send(topic, value)),
                                   lambda: producer.flush(20))
        assert [future.get(10).offset for future in futures] == list(range(sent))
    finally:
        producer.close()
    assert lines(broker_log, REAUTHENTICATED) >= 2
    assert lines(broker_log, EXPIRED) == 0
    assert tokens.issued >= 3  # a login and two re-authentications, at least


def login(cluster: EmbeddedCluster, user: str) -> tuple[WireClient, dict[str, Any]]:
    client = WireClient(address(cluster), timeout=10)
    assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    return client, client.call(ApiKey.SASL_AUTHENTICATE, 2,
                               {"auth_bytes": plain_message(user, USERS[user])})


METADATA = {"topics": [], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}


def test_a_client_that_does_not_re_authenticate_is_closed_at_its_next_request(
        cluster: EmbeddedCluster, broker_log: pytest.LogCaptureFixture) -> None:
    client, answer = login(cluster, "alice")
    assert (answer["error_code"], answer["session_lifetime_ms"]) == (0, LIFETIME_MS)
    assert "brokers" in client.call(ApiKey.METADATA, 8, METADATA)
    time.sleep(LIFETIME_MS / 1000)
    client.send(ApiKey.METADATA, 8, METADATA)
    assert client.is_closed_by_peer()
    assert lines(broker_log, EXPIRED) == 1


def test_re_authentication_as_another_principal_is_refused_and_as_the_same_goes_on(cluster: EmbeddedCluster) -> None:
    client, _answer = login(cluster, "alice")
    time.sleep(1.0)  # Kafka allows one re-authentication a second
    assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    answer = client.call(ApiKey.SASL_AUTHENTICATE, 2,
                         {"auth_bytes": plain_message("bob", USERS["bob"])})
    assert answer["error_code"] == SaslAuthenticationFailedError.errno
    assert "cannot change principals" in answer["error_message"]
    assert client.is_closed_by_peer()
    same, _answer = login(cluster, "alice")  # and as the same one, it goes on
    time.sleep(1.0)
    # A request in flight, then the re-authentication, all sent before any answer: the
    # answers come in order.
    sent = [same.send(ApiKey.METADATA, 8, METADATA),
            same.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}),
            same.send(ApiKey.SASL_AUTHENTICATE, 2,
                      {"auth_bytes": plain_message("alice", USERS["alice"])})]
    metadata = same.receive(ApiKey.METADATA, 8)
    handshake = same.receive(ApiKey.SASL_HANDSHAKE, 1)
    renewed = same.receive(ApiKey.SASL_AUTHENTICATE, 2)
    assert [metadata[0], handshake[0], renewed[0]] == sent
    assert "brokers" in metadata[1] and handshake[1]["error_code"] == 0
    assert (renewed[1]["error_code"], renewed[1]["session_lifetime_ms"]) == (0, LIFETIME_MS)
    assert "brokers" in same.call(ApiKey.METADATA, 8, METADATA)
