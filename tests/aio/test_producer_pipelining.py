"""A ``send()`` waiting for room in its partition's queue resumes when a batch leaves the
queue for its request, not when that request is answered: the producer fills the next
batch while the broker appends the last one.

The answers to Produce requests are held back here (the request is sent only when the test
releases it), so the state the producer reaches meanwhile is its own: one batch in flight,
the queue full behind it, and the sending coroutine waiting. When the waiting send resumed
only on an answer, the queue held one batch less.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.aio import AIOKafkaProducer, TopicPartition
from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster
from tests.conftest import TEST_BROKER_CONFIG

TOPIC = "aio-pipelined"
VALUE = b"v" * 100
SETTLE_S = 0.3
"""How long the count of accepted sends must stay still to call the producer waiting."""
DEADLINE_S = 20


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(1, config=TEST_BROKER_CONFIG) as cluster:
        yield cluster


async def _fill_while_answers_are_held(bootstrap: str) -> tuple[int, bool, int, int]:
    """(batches queued, whether one is in flight, records accepted, records delivered)
    once the producer waits with its answers held, and after they are released."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_batch_size=1024,
                                linger_ms=0)
    await producer.start()
    try:
        await producer.send_and_wait(TOPIC, VALUE, partition=0)  # metadata and connection
        client: Any = producer._client
        release = asyncio.Event()
        real_send = client.send

        async def held_send(node: int, api_key: int, body: Any, **kwargs: Any) -> Any:
            if api_key == ApiKey.PRODUCE:
                await release.wait()
            return await real_send(node, api_key, body, **kwargs)

        client.send = held_send
        futures: list[asyncio.Future[Any]] = []

        async def fill() -> None:
            while True:
                futures.append(await producer.send(TOPIC, VALUE, partition=0))

        filler = asyncio.get_running_loop().create_task(fill())
        loop = asyncio.get_running_loop()
        deadline, last, still_since = loop.time() + DEADLINE_S, -1, loop.time()
        while loop.time() - still_since < SETTLE_S:
            assert loop.time() < deadline, "the producer never stopped accepting records"
            await asyncio.sleep(0.05)
            if len(futures) != last:
                last, still_since = len(futures), loop.time()
        tp = TopicPartition(TOPIC, 0)
        queued = len(producer._queued[tp])
        in_flight = tp in producer._in_flight
        accepted = len(futures)
        filler.cancel()
        release.set()
        await asyncio.wait_for(producer.flush(), DEADLINE_S)
        delivered = sum(1 for future in futures if future.done() and not future.exception())
        return queued, in_flight, accepted, delivered
    finally:
        await producer.stop()


def test_a_waiting_send_resumes_when_a_batch_leaves_for_its_request(
        broker: EmbeddedCluster) -> None:
    queued, in_flight, accepted, delivered = asyncio.run(
        _fill_while_answers_are_held(broker.bootstrap_servers))
    assert in_flight, "no batch was in flight while the answers were held"
    assert queued == 2, f"{queued} batches queued behind the one in flight, not 2"
    assert delivered == accepted
