"""kafkalite.aio over TLS and SASL with aiokafka's parameter names: a round trip over SSL,
SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256/512), and a wrong password refused at
start() with aiokafka's typed error."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from typing import Any

import pytest

from kafkalite.aio import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from kafkalite.aio.errors import AuthenticationFailedError
from tests.security.conftest import (
    PLAIN_USERS,
    SCRAM_USER,
    SecureBroker,
    pki,  # noqa: F401 (a fixture secure uses)
    secure,  # noqa: F401 (a fixture)
)

CASES = [("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"),
         ("SASL_SSL", "SCRAM-SHA-512")]


def settings(broker: SecureBroker, protocol: str, mechanism: str | None,
             password: str | None = None) -> dict[str, Any]:
    """aiokafka's names: security_protocol, ssl_context, sasl_mechanism, sasl_plain_*."""
    conf: dict[str, Any] = {"bootstrap_servers": broker.address(protocol),
                            "security_protocol": protocol, "request_timeout_ms": 10_000}
    if protocol.endswith("SSL"):
        conf["ssl_context"] = ssl.create_default_context(cafile=str(broker.pki.ca))
    if mechanism is not None:
        user, right = SCRAM_USER if mechanism.startswith("SCRAM") else \
            ("alice", PLAIN_USERS["alice"])
        conf.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                    sasl_plain_password=password or right)
    return conf


async def round_trip(conf: dict[str, Any], topic: str) -> list[bytes]:
    async with AIOKafkaProducer(**conf) as producer:
        await producer.send_and_wait(topic, b"over the wire", partition=0)
    tp = TopicPartition(topic, 0)
    async with AIOKafkaConsumer(auto_offset_reset="earliest", **conf) as consumer:
        consumer.assign([tp])
        batches = await consumer.getmany(tp, timeout_ms=10_000)
        return [message.value for message in batches.get(tp, [])]


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_round_trip(secure: SecureBroker, protocol: str,  # noqa: F811
                    mechanism: str | None) -> None:
    topic = f"aio-{protocol}-{mechanism}-{uuid.uuid4().hex[:6]}".lower()
    values = asyncio.run(round_trip(settings(secure, protocol, mechanism), topic))
    assert values == [b"over the wire"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_wrong_password_is_refused_at_start(secure: SecureBroker,  # noqa: F811
                                              mechanism: str) -> None:
    async def start() -> None:
        producer = AIOKafkaProducer(**settings(secure, "SASL_SSL", mechanism, "wrong"))
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(AuthenticationFailedError):
        asyncio.run(asyncio.wait_for(start(), 30))
