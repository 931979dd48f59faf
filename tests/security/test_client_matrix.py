"""kcat, confluent-kafka, kafka-python, aiokafka and the kafkalite SDK each produce and
consume over SSL, SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and SASL_SSL; a wrong
password fails cleanly for each, and the broker keeps serving."""

from __future__ import annotations

import asyncio
import subprocess
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
    producer = KafkaProducer(**conf, max_block_ms=8000)
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
