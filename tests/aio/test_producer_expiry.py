"""A record for a partition without a leader fails with KafkaTimeoutError once
``request_timeout_ms`` has passed since its batch was created (aiokafka's rule), while it
is still queued: ``send_and_wait`` and ``flush`` end instead of waiting for a leader that
may never come back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from kafkalite.admin import AdminClient, NewTopic
from kafkalite.aio import AIOKafkaProducer
from kafkalite.aio.errors import KafkaTimeoutError
from kafkalite_server import EmbeddedCluster
from tests.conftest import TEST_BROKER_CONFIG

TOPIC = "aio-orphaned"
HOST_ID = 1
"""The broker holding the topic's only replica; stopping it leaves the partition without
a leader."""


@pytest.fixture(scope="module")
def leaderless() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(2, config=TEST_BROKER_CONFIG) as cluster:
        admin = AdminClient(cluster.bootstrap_servers, request_timeout_ms=10_000)
        try:
            admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [HOST_ID]})],
                                wait_for_metadata=True)
        finally:
            admin.close()
        cluster.stop_broker(HOST_ID)
        deadline = time.monotonic() + 30
        while cluster.partition_state(TOPIC, 0).leader != -1:
            assert time.monotonic() < deadline, f"{TOPIC}-0 kept a leader after its broker stopped"
            time.sleep(0.05)
        yield cluster


def test_send_and_wait_and_flush_end_with_a_timeout(leaderless: EmbeddedCluster) -> None:
    async def main() -> None:
        async with AIOKafkaProducer(bootstrap_servers=leaderless.bootstrap_servers,
                                    request_timeout_ms=1000) as producer:
            with pytest.raises(KafkaTimeoutError, match=f"{TOPIC}-0.*no leader"):
                await asyncio.wait_for(producer.send_and_wait(TOPIC, b"lost", partition=0), 10)
            pending = await producer.send(TOPIC, b"also lost", partition=0)
            await asyncio.wait_for(producer.flush(), 10)
            with pytest.raises(KafkaTimeoutError, match=f"{TOPIC}-0"):
                await pending

    asyncio.run(asyncio.wait_for(main(), 30))  # stop() flushes: bounded too
