"""SASL OAUTHBEARER from kafkalite.aio with aiokafka's AbstractTokenProvider, whose token()
is a coroutine: awaited at each login (one per connection)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from kafkalite.aio import AbstractTokenProvider, AIOKafkaProducer
from kafkalite.protocol.sasl_oauthbearer import unsecured_token
from kafkalite_server import EmbeddedCluster
from tests.conftest import TEST_BROKER_CONFIG

CONFIG = {**TEST_BROKER_CONFIG,
          "listeners": "UNSECURED://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
          "listener.security.protocol.map": "UNSECURED:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
          "inter.broker.listener.name": "PLAINTEXT",
          "sasl.enabled.mechanisms": "OAUTHBEARER"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=CONFIG) as cluster:
        yield cluster


class Provider(AbstractTokenProvider):
    def __init__(self) -> None:
        self.calls = 0

    async def token(self) -> str:
        await asyncio.sleep(0)  # a real provider awaits its identity service here
        self.calls += 1
        now = int(time.time())
        return unsecured_token({"sub": "aio-app", "iat": now, "exp": now + 3600})


def test_a_coroutine_token_provider_logs_in(cluster: EmbeddedCluster) -> None:
    provider = Provider()

    async def main() -> int:
        async with AIOKafkaProducer(
                bootstrap_servers=cluster.brokers[0].address("UNSECURED"),
                security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                sasl_oauth_token_provider=provider) as producer:
            metadata = await producer.send_and_wait("aio-oauth", b"with a token")
            return metadata.offset

    assert asyncio.run(asyncio.wait_for(main(), 30)) == 0
    assert provider.calls >= 1
