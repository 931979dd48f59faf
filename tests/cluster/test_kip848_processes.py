"""A KIP-848 consumer group across three ``kafkalite-server`` processes over a real
ZooKeeper: two confluent-kafka members (``group.protocol=consumer``) read and commit while
the group coordinator's broker is SIGKILLed. The next coordinator loads the group from
``__consumer_offsets`` where it was: the same members at the same epochs (nobody rejoins,
nothing is reassigned), and every record is read exactly once."""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from polling import until

from kafkalite.protocol import ApiKey
from tests.cluster.group_processes import running, started_brokers
from tests.conftest import WireClient

pytestmark = pytest.mark.slow
BROKERS = (1, 2, 3)
SETTINGS = {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "3000",
            "replica.fetch.backoff.ms": "200", "controlled.shutdown.retry.backoff.ms": "200",
            "offsets.topic.num.partitions": "3",
            "group.consumer.heartbeat.interval.ms": "500"}
TOPIC, GROUP, PARTITIONS = "kip848-failover", "kip848-failover", 6

_until = functools.partial(until, timeout=90.0, interval=0.2,
                           tolerate=(OSError, KeyError, AssertionError, IndexError))


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory, zookeeper: Any,
            request: pytest.FixtureRequest) -> Iterator[dict[int, Any]]:
    with started_brokers(request, tmp_path_factory.mktemp("kip848-cluster"), zookeeper.connect,
                         "/kip848_processes", SETTINGS, BROKERS) as started:
        yield started


def _described(brokers: dict[int, Any]) -> tuple[int, dict[str, Any]]:
    """(the coordinator's broker id, its ConsumerGroupDescribe of the group)."""
    via = WireClient(next(b for b in brokers.values() if b.process).bootstrap_servers)
    try:
        found = via.find_coordinator(GROUP)
        assert found["error_code"] == 0, found
        node = int(found["node_id"])
    finally:
        via.close()
    coordinator = WireClient(brokers[node].bootstrap_servers)
    try:
        answer = coordinator.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0,
                                  {"group_ids": [GROUP], "include_authorized_operations": False})
    finally:
        coordinator.close()
    [group] = answer["groups"]
    assert group["error_code"] == 0, group
    return node, group


class Member:
    """One librdkafka member; it commits each record it reads before reading the next
    (again until the coordinator takes it), so no record is read twice."""

    def __init__(self, bootstrap: str, name: str) -> None:
        self.owned: set[int] = set()
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                  "group.protocol": "consumer", "client.id": name,
                                  "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False})
        self.consumer.subscribe([TOPIC], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.owned |= {tp.partition for tp in partitions}

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.owned -= {tp.partition for tp in partitions}

    def poll(self, seen: Counter[bytes]) -> None:
        message = self.consumer.poll(0.05)
        if message is None or message.error() is not None:
            return
        seen[message.value()] += 1
        deadline = time.monotonic() + 90
        while True:
            try:
                self.consumer.commit(message=message, asynchronous=False)
                return
            except KafkaException:  # the coordinator is moving
                assert time.monotonic() < deadline, "no coordinator took the commit in 90 s"
                time.sleep(0.2)


def _produce(bootstrap: str, start: int, count: int) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    values = [f"record-{i}".encode() for i in range(start, start + count)]
    for index, value in enumerate(values):
        producer.produce(TOPIC, value, partition=index % PARTITIONS)
    assert producer.flush(60) == 0
    return values


def _consume(members: list[Member], seen: Counter[bytes], total: int, what: str) -> None:
    deadline = time.monotonic() + 120
    while sum(seen.values()) < total:
        assert time.monotonic() < deadline, f"{what}: {sum(seen.values())} of {total} read"
        for member in members:
            member.poll(seen)


def test_the_group_resumes_at_the_next_coordinator(brokers: dict[int, Any]) -> None:
    bootstrap = running(brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _until(lambda: len(admin.list_topics(timeout=10).brokers) == 3, "three live brokers")
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})]
                        )[TOPIC].result(30)
    produced = _produce(bootstrap, 0, 60)
    seen: Counter[bytes] = Counter()
    members = [Member(bootstrap, "a"), Member(bootstrap, "b")]
    try:
        _consume(members, seen, 60, "before the kill")
        deadline = time.monotonic() + 60
        while sorted(len(m.owned) for m in members) != [3, 3]:
            assert time.monotonic() < deadline, [m.owned for m in members]
            for member in members:
                member.poll(seen)
        coordinator, before = _described(brokers)
        brokers[coordinator].kill()
        produced += _produce(running(brokers), 60, 60)
        _consume(members, seen, 120, "after the kill")
        successor, after = _described(brokers)
    finally:
        for member in members:
            member.consumer.close()
    assert successor != coordinator
    assert after["group_epoch"] == before["group_epoch"]
    assert {(m["member_id"], m["member_epoch"]) for m in after["members"]} == \
        {(m["member_id"], m["member_epoch"]) for m in before["members"]}
    assert set(seen) == set(produced)
    assert max(seen.values()) == 1, [v for v, n in seen.items() if n > 1][:5]
