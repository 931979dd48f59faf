"""kcat, confluent-kafka, kafka-python, aiokafka and the kafkalite SDK each produce and
consume over SSL, SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and SASL_SSL; a wrong
password fails cleanly for each, and the broker keeps serving."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.security.conftest import PLAIN_USERS, SCRAM_USER, SecureBroker

CASES = [("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
         ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"),
         ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512")]
TIMEOUT_S = 20


def credentials(mechanism: str | None) -> tuple[str, str]:
    if mechanism is not None and mechanism.startswith("SCRAM"):
        return SCRAM_USER
    return "alice", PLAIN_USERS["alice"]


def librdkafka_conf(secure: SecureBroker, protocol: str, mechanism: str | None,
                    password: str | None = None) -> dict[str, str]:
    conf = {"bootstrap.servers": secure.address(protocol), "security.protocol": protocol}
    if protocol.endswith("SSL"):
        conf["ssl.ca.location"] = str(secure.pki.ca)
    if mechanism is not None:
        user, right = credentials(mechanism)
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user,
                     "sasl.password": password or right})
    return conf


def python_conf(secure: SecureBroker, protocol: str, mechanism: str | None,
                password: str | None = None) -> dict[str, Any]:
    """kafka-python's names (also the kafkalite SDK's)."""
    conf: dict[str, Any] = {"bootstrap_servers": secure.address(protocol),
                            "security_protocol": protocol}
    if protocol.endswith("SSL"):
        conf["ssl_cafile"] = str(secure.pki.ca)
    if mechanism is not None:
        user, right = credentials(mechanism)
        conf.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                    sasl_plain_password=password or right)
    return conf


# ------------------------------------------------------------------ one round trip per client

def with_confluent(secure: SecureBroker, protocol: str, mechanism: str | None,
                   topic: str, password: str | None = None) -> list[bytes]:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    conf = librdkafka_conf(secure, protocol, mechanism, password)
    errors: list[Any] = []
    producer = Producer({**conf, "message.timeout.ms": 8000,
                         "error_cb": errors.append})
    producer.produce(topic, b"confluent", on_delivery=lambda err, msg: err and errors.append(err))
    producer.flush(TIMEOUT_S)
    if errors:
        raise KafkaException(errors[0])
    consumer = Consumer({**conf, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    message = consumer.poll(TIMEOUT_S)
    consumer.close()
    return [message.value()] if message is not None and not message.error() else []


def with_kafka_python(secure: SecureBroker, protocol: str, mechanism: str | None,
                      topic: str, password: str | None = None) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    conf = python_conf(secure, protocol, mechanism, password)
    # kafka-python retries a refused login until its bootstrap timeout (30 s by default)
    producer = KafkaProducer(**conf, max_block_ms=8000, bootstrap_timeout_ms=8000)
    producer.send(topic, b"kafka-python").get(TIMEOUT_S)
    producer.close()
    consumer = KafkaConsumer(**conf, consumer_timeout_ms=TIMEOUT_S * 1000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    first = next(consumer, None)  # not a list of all: that waits out the timeout
    values = [] if first is None else [first.value]
    consumer.close()
    return values


def with_aiokafka(secure: SecureBroker, protocol: str, mechanism: str | None,
                  topic: str, password: str | None = None) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.helpers import create_ssl_context

    conf = python_conf(secure, protocol, mechanism, password)
    cafile = conf.pop("ssl_cafile", None)
    if cafile is not None:
        conf["ssl_context"] = create_ssl_context(cafile=cafile)

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**conf, request_timeout_ms=8000)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"aiokafka")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**conf)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
            record = await asyncio.wait_for(consumer.getone(), TIMEOUT_S)
            return [record.value]
        finally:
            await consumer.stop()
    return asyncio.run(asyncio.wait_for(run(), TIMEOUT_S * 2))


def with_kafkalite(secure: SecureBroker, protocol: str, mechanism: str | None,
                   topic: str, password: str | None = None) -> list[bytes]:
    from kafkalite import Consumer, Producer, TopicPartition

    conf = python_conf(secure, protocol, mechanism, password)
    producer = Producer(**conf, max_block_ms=8000)
    try:
        producer.send(topic, b"kafkalite").get(TIMEOUT_S)
    finally:
        producer.close()
    consumer = Consumer(**conf, consumer_timeout_ms=TIMEOUT_S * 1000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    first = next(consumer, None)  # not a list of all: that waits out the timeout
    values = [] if first is None else [first.value]
    consumer.close()
    return values


def with_kcat(secure: SecureBroker, protocol: str, mechanism: str | None,
              topic: str, password: str | None = None) -> list[bytes]:
    conf = librdkafka_conf(secure, protocol, mechanism, password)
    brokers = conf.pop("bootstrap.servers")
    options = [arg for key, value in conf.items() for arg in ("-X", f"{key}={value}")]
    subprocess.run(["kcat", "-b", brokers, "-P", "-t", topic, "-p", "0", *options],
                   input=b"kcat\n", check=True, timeout=TIMEOUT_S, capture_output=True)
    out = subprocess.run(["kcat", "-b", brokers, "-C", "-t", topic, "-p", "0", "-o",
                          "beginning", "-c", "1", "-e", *options], check=True,
                         timeout=TIMEOUT_S, capture_output=True)
    return out.stdout.splitlines()[:1]


CLIENTS: dict[str, tuple[Callable[..., list[bytes]], bytes]] = {
    "kcat": (with_kcat, b"kcat"),
    "confluent-kafka": (with_confluent, b"confluent"),
    "kafka-python": (with_kafka_python, b"kafka-python"),
    "aiokafka": (with_aiokafka, b"aiokafka"),
    "kafkalite": (with_kafkalite, b"kafkalite"),
}


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("protocol, mechanism", CASES)
def test_produce_and_consume(secure: SecureBroker, client: str, protocol: str,
                             mechanism: str | None) -> None:
    run, value = CLIENTS[client]
    topic = f"m-{uuid.uuid4().hex[:10]}"
    assert run(secure, protocol, mechanism, topic) == [value]


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("protocol, mechanism", [("SASL_SSL", "PLAIN"),
                                                 ("SASL_PLAINTEXT", "SCRAM-SHA-256")])
def test_wrong_password_fails_cleanly(secure: SecureBroker, client: str, protocol: str,
                                      mechanism: str) -> None:
    run, _value = CLIENTS[client]
    topic = f"w-{uuid.uuid4().hex[:10]}"
    with pytest.raises(Exception):  # noqa: B017 - each client has its own error type
        run(secure, protocol, mechanism, topic, password="not-the-password")
    # Nothing was written, and the broker serves the right password at once.
    assert with_confluent(secure, protocol, mechanism, topic) == [b"confluent"]


# ------------------------------------------------------------------ connection errors named

CONFIGURED_TIMEOUT_MS = 3000
"""Each SDK call below waits this long (max_block_ms, default_api_timeout_ms, the admin
call's timeout); the test's own wait is bounded by a few times it."""


def kafkalite_calls(conf: dict[str, Any]) -> dict[str, Callable[[], object]]:
    """One blocking call of each SDK client, each bounded by CONFIGURED_TIMEOUT_MS."""
    from kafkalite import AdminClient, Consumer, Producer, TopicPartition

    def send() -> object:
        with Producer(**conf, max_block_ms=CONFIGURED_TIMEOUT_MS) as producer:
            return producer.send("events", b"x").get(60)

    def flush_and_deliver() -> object:
        """A batch whose partition is known but whose leader cannot be reached: it expires
        after delivery_timeout_ms, and its future names why."""
        with Producer(**conf, max_block_ms=60_000, request_timeout_ms=1000, linger_ms=0,
                      delivery_timeout_ms=CONFIGURED_TIMEOUT_MS) as producer:
            producer._client.cluster.update_from_metadata(_one_partition_metadata(conf), 0)
            future = producer.send("events", b"x", partition=0)
            producer.flush(60)
            return future.get(0)

    def poll_subscribed() -> object:
        with Consumer("events", **conf, group_id="g",
                      default_api_timeout_ms=CONFIGURED_TIMEOUT_MS) as consumer:
            for _ in range(20):  # bounded: each poll waits 1 s at most
                consumer.poll(1000)
        return None

    def poll_assigned() -> object:
        with Consumer(**conf, default_api_timeout_ms=CONFIGURED_TIMEOUT_MS) as consumer:
            consumer.assign([TopicPartition("events", 0)])
            return consumer.poll(1000)

    def admin() -> object:
        with AdminClient(**conf, request_timeout_ms=CONFIGURED_TIMEOUT_MS) as client:
            return client.list_topics()

    return {"Producer.send": send, "Producer.flush": flush_and_deliver,
            "Consumer.poll (group)": poll_subscribed, "Consumer.poll (assigned)": poll_assigned,
            "AdminClient.list_topics": admin}


def _one_partition_metadata(conf: dict[str, Any]) -> dict[str, Any]:
    """A Metadata answer naming the bootstrap address as the leader of events-0."""
    host, _, port = conf["bootstrap_servers"].rpartition(":")
    return {"brokers": [{"node_id": 7, "host": host, "port": int(port), "rack": None}],
            "cluster_id": None, "controller_id": 7, "topics": [{
                "error_code": 0, "name": "events", "is_internal": False, "partitions": [{
                    "error_code": 0, "partition_index": 0, "leader_id": 7,
                    "leader_epoch": 0, "replica_nodes": [7], "isr_nodes": [7],
                    "offline_replicas": []}]}]}


def _raised_within(call: Callable[[], object], bound_s: float) -> BaseException:
    """What ``call`` raised, waiting at most ``bound_s`` for it to finish."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound_s)
    assert outcome, f"no error within {bound_s} s (the configured timeout is " \
                    f"{CONFIGURED_TIMEOUT_MS} ms)"
    assert outcome[0] is not None, "the call succeeded"
    return outcome[0]


def _misconfigurations(secure: SecureBroker, tmp_path_factory: pytest.TempPathFactory
                       ) -> dict[str, tuple[dict[str, Any], str]]:
    """(client settings, the cause the error must name) per kind of mistake."""
    from tests.security.certs import make_pki

    tls, plain = secure.address("SSL"), secure.address("PLAINTEXT")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = f"127.0.0.1:{probe.getsockname()[1]}"
    strangers = make_pki(tmp_path_factory.mktemp("other-ca"))
    return {
        "wrong port": ({"bootstrap_servers": closed_port},
                       f"connection refused at {closed_port}"),
        "untrusted CA": ({"bootstrap_servers": tls, "security_protocol": "SSL",
                          "ssl_cafile": str(strangers.ca)},
                         f"TLS handshake with {tls} failed: CERTIFICATE_VERIFY_FAILED"),
        "plaintext client on a TLS port": (
            {"bootstrap_servers": tls},
            f"the broker at {tls} closed the connection before answering ApiVersions: is "
            "`security_protocol` right?"),
        "TLS client on a plaintext port": (
            {"bootstrap_servers": plain, "security_protocol": "SSL",
             "ssl_cafile": str(secure.pki.ca)},
            f"the broker at {plain} closed the connection during the TLS handshake: is "
            "`security_protocol` right?"),
    }


MISTAKES = ["wrong port", "untrusted CA", "plaintext client on a TLS port",
            "TLS client on a plaintext port"]
CALLS = ["Producer.send", "Producer.flush", "Consumer.poll (group)",
         "Consumer.poll (assigned)", "AdminClient.list_topics"]


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_client_that_cannot_connect_says_where_and_why(
        secure: SecureBroker, tmp_path_factory: pytest.TempPathFactory, mistake: str,
        call: str) -> None:
    from kafkalite.errors import BrokerUnreachableError

    conf, cause = _misconfigurations(secure, tmp_path_factory)[mistake]
    error = _raised_within(kafkalite_calls(conf)[call], 10 * CONFIGURED_TIMEOUT_MS / 1000)
    assert isinstance(error, BrokerUnreachableError), repr(error)
    assert cause in str(error)
