"""Group membership of kafkalite.aio's consumer: two members split a topic's partitions
and hear of it through coroutine listeners, each record is read by one of them once, a
pattern subscription follows a matching topic, and a stopped consumer ends `async for`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.aio import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    TopicPartition,
)
from kafkalite.aio.errors import ConsumerStoppedError
from kafkalite.consumer.assignors import RoundRobinAssignor
from kafkalite_server import EmbeddedCluster
from tests.conftest import TEST_BROKER_CONFIG

PARTITIONS = 4
DEADLINE_S = 30


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(1, config={**TEST_BROKER_CONFIG,
                                         "num.partitions": str(PARTITIONS)}).start()
    yield cluster
    cluster.stop()


class Recorder(ConsumerRebalanceListener):
    """A listener whose callbacks are coroutines (they sleep, so they must be awaited)."""

    def __init__(self) -> None:
        self.assigned: list[set[TopicPartition]] = []
        self.revoked: list[set[TopicPartition]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await asyncio.sleep(0)
        self.revoked.append(set(revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await asyncio.sleep(0)
        self.assigned.append(set(assigned))


async def fill(bootstrap: str, topic: str, count: int) -> None:
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        for i in range(count):
            await producer.send(topic, f"{i}".encode(), partition=i % PARTITIONS)


def test_two_members_split_the_partitions(broker: EmbeddedCluster) -> None:
    async def main() -> tuple[list[Recorder], list[set[TopicPartition]], list[str]]:
        bootstrap = broker.bootstrap_servers
        await fill(bootstrap, "aio-split", 40)
        listeners = [Recorder(), Recorder()]
        members = [AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id="aio-split-g",
                                    auto_offset_reset="earliest", heartbeat_interval_ms=200,
                                    session_timeout_ms=6000) for _ in listeners]
        for member, listener in zip(members, listeners, strict=True):
            member.subscribe(["aio-split"], listener=listener)
            await member.start()
        seen: list[str] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_S
        try:
            while loop.time() < deadline:
                for member in members:
                    for records in (await member.getmany(timeout_ms=100)).values():
                        seen += [r.value.decode() for r in records]
                assignments = [member.assignment() for member in members]
                if len(seen) >= 40 and all(assignments) and \
                        sum(map(len, assignments)) == PARTITIONS:
                    break
            return listeners, [m.assignment() for m in members], seen
        finally:
            for member in members:
                await member.stop()

    listeners, assignments, seen = asyncio.run(main())
    assert assignments[0] and assignments[1]
    assert assignments[0].isdisjoint(assignments[1])
    assert assignments[0] | assignments[1] == {TopicPartition("aio-split", p)
                                               for p in range(PARTITIONS)}
    assert sorted(seen, key=int) == [str(i) for i in range(40)]
    for listener, assignment in zip(listeners, assignments, strict=True):
        assert listener.assigned[-1] == assignment  # the coroutine was awaited
        assert listener.revoked[-1] == assignment  # stop() revokes through the listener


def test_a_pattern_subscription_follows_a_matching_topic(broker: EmbeddedCluster) -> None:
    async def main() -> set[str]:
        bootstrap = broker.bootstrap_servers
        await fill(bootstrap, "aio-pattern-a", 4)
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id="aio-pattern-g",
                                    auto_offset_reset="earliest", metadata_max_age_ms=200)
        consumer.subscribe(pattern=r"aio-pattern-.*")
        await consumer.start()
        try:
            await fill(bootstrap, "aio-pattern-b", 4)
            topics: set[str] = set()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + DEADLINE_S
            while topics != {"aio-pattern-a", "aio-pattern-b"} and loop.time() < deadline:
                for tp in await consumer.getmany(timeout_ms=200):
                    topics.add(tp.topic)
            return topics
        finally:
            await consumer.stop()

    assert asyncio.run(main()) == {"aio-pattern-a", "aio-pattern-b"}


def test_a_stopped_consumer_ends_iteration_and_refuses_getmany(broker: EmbeddedCluster
                                                               ) -> None:
    async def main() -> list[int]:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers,
                                    auto_offset_reset="earliest")
        await consumer.start()
        consumer.assign([TopicPartition("aio-idle", 0)])
        stopper = asyncio.get_running_loop().call_later(0.3, lambda: asyncio.ensure_future(
            consumer.stop()))
        offsets = [message.offset async for message in consumer]
        stopper.cancel()
        with pytest.raises(ConsumerStoppedError):
            await consumer.getmany()
        return offsets

    assert asyncio.run(asyncio.wait_for(main(), DEADLINE_S)) == []


class BrokenAssignor(RoundRobinAssignor):
    """An application's assignor with a bug."""

    name = "broken"

    def assign(self, cluster: Any, subscriptions: Any) -> Any:
        raise RuntimeError("the assignor's bug")


def test_a_failing_assignor_reaches_getmany_instead_of_stalling(broker: EmbeddedCluster
                                                                ) -> None:
    async def main() -> None:
        consumer = AIOKafkaConsumer("aio-broken", bootstrap_servers=broker.bootstrap_servers,
                                    group_id="aio-broken-g",
                                    partition_assignment_strategy=[BrokenAssignor])
        await consumer.start()
        try:
            with pytest.raises(RuntimeError, match="the assignor's bug"):
                for _ in range(50):  # bounded: 50 x 200 ms
                    await consumer.getmany(timeout_ms=200)
            with pytest.raises(RuntimeError, match="the assignor's bug"):
                for _ in range(50):  # the next join fails the same way, and says so again
                    await consumer.getmany(timeout_ms=200)
        finally:
            await consumer.stop()

    asyncio.run(asyncio.wait_for(main(), DEADLINE_S))


def test_getmany_arrow_returns_the_records_as_one_record_batch(broker: EmbeddedCluster
                                                               ) -> None:
    pytest.importorskip("pyarrow")

    async def main() -> Any:
        async with AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            for i in range(30):
                await producer.send("aio-arrow", f"row {i}".encode(), key=b"k", partition=0)
        tp = TopicPartition("aio-arrow", 0)
        async with AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers,
                                    auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            consumer.seek(tp, 5)
            batch = await consumer.getmany_arrow(tp, timeout_ms=10_000, max_records=20)
            return batch, await consumer.position(tp)

    batch, position = asyncio.run(asyncio.wait_for(main(), DEADLINE_S))
    assert batch.num_rows == 20
    assert batch["offset"].to_pylist() == list(range(5, 25))
    assert batch["value"].to_pylist()[:2] == [b"row 5", b"row 6"]
    assert set(batch["key"].to_pylist()) == {b"k"}
    assert position == 25
