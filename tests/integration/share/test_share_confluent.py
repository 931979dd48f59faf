"""confluent-kafka's ShareConsumer (librdkafka 2.16) against one broker: several consumers
share one partition's records, two consumers split a four-partition topic between them,
acknowledgements (accept, release, reject) and lock expiry decide what comes back, and a
record is archived after its fifth delivery."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.integration.share.helpers import (
    ClientAssignments,
    describe,
    set_group_configs,
    start_offset,
    wait_assigned,
)
from tests.polling import until

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer  # noqa: E402

from kafkalite.admin import AdminClient, NewTopic  # noqa: E402
from kafkalite_server import EmbeddedCluster  # noqa: E402

LOCK_MS = 1000
BROKER_CONFIG = {
    "group.share.min.record.lock.duration.ms": str(LOCK_MS),
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.heartbeat.interval.ms": "500",
    "num.partitions": "1",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=BROKER_CONFIG) as cluster:
        yield cluster


@pytest.fixture
def share_consumers(cluster: EmbeddedCluster) -> Iterator[Callable[..., ShareConsumer]]:
    made: list[ShareConsumer] = []

    def make(group: str, topic: str, **config: Any) -> ShareConsumer:
        consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                  "group.id": group, **config})
        consumer.subscribe([topic])
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close()


def _topic(cluster: EmbeddedCluster, name: str, partitions: int = 1) -> str:
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, partitions, 1)])
    return name


def _produce(cluster: EmbeddedCluster, topic: str, values: list[bytes],
             partitions: int = 1) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
    for index, value in enumerate(values):
        producer.produce(topic, value, partition=index % partitions)
    assert producer.flush(30) == 0


def test_two_consumers_share_one_partition_and_accept_each_record_once(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    topic, group = _topic(cluster, "shared-once"), "exactly-once"
    # locks far longer than a poll takes: an implicit accept always lands in time
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="15000")
    holding = ClientAssignments(2)
    consumers = [share_consumers(group, topic, **{"max.poll.records": "20"}, **holding.config(i))
                 for i in range(2)]
    received: list[Counter[bytes]] = [Counter(), Counter()]
    stop = threading.Event()

    def consume(index: int) -> None:
        while not stop.is_set():
            for message in consumers[index].poll(0.2):
                if message.error() is None:
                    received[index][message.value()] += 1
            time.sleep(0.01)  # lets the other member's fetch in on a busy machine

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    try:
        wait_assigned(cluster.bootstrap_servers, group, 2)
        until(lambda: holding.sizes == [1, 1], "both consumers holding the partition", 60)
        values = [f"record-{i}".encode() for i in range(1000)]
        _produce(cluster, topic, values)
        until(lambda: sum(received[0].values()) + sum(received[1].values()) >= 1000,
              "1,000 records received", 120)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    for consumer in consumers:
        consumer.commit_sync(30)
    _assert_each_read_once(received, values)
    assert all(sum(counts.values()) > 0 for counts in received), [len(c) for c in received]
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 1000,
          "every record accepted: the share-partition start offset at the log end")


def _assigned(bootstrap: str, group: str) -> dict[str, set[int]]:
    """Each member's assigned partitions, as ShareGroupDescribe shows them."""
    return {m["member_id"]: {p for t in m["assignment"]["topic_partitions"]
                             for p in t["partitions"]}
            for m in describe(bootstrap, group)["members"]}


def test_two_consumers_split_four_partitions_and_read_each_record_once(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    topic, group = _topic(cluster, "split-four", 4), "split-four"
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="15000")
    holding = ClientAssignments(2)
    consumers = [share_consumers(group, topic, **holding.config(i)) for i in range(2)]
    received: list[Counter[bytes]] = [Counter(), Counter()]
    read_from: list[set[int]] = [set(), set()]
    stop = threading.Event()

    def consume(index: int) -> None:
        while not stop.is_set():
            for message in consumers[index].poll(0.2):
                value, partition = message.value(), message.partition()
                if message.error() is None and value is not None and partition is not None:
                    received[index][value] += 1
                    read_from[index].add(partition)
            time.sleep(0.01)

    def split() -> bool:
        """The coordinator assigned two partitions each, and both consumers took theirs
        (the first had all four until the second joined)."""
        assigned = _assigned(cluster.bootstrap_servers, group)
        return len(assigned) == 2 and sorted(map(len, assigned.values())) == [2, 2] and \
            set().union(*assigned.values()) == {0, 1, 2, 3} and holding.sizes == [2, 2]

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    try:
        until(split, "two members with two partitions each", 60,
              tolerate=(OSError, AssertionError))
        values = [f"split-{i}".encode() for i in range(400)]
        _produce(cluster, topic, values, partitions=4)
        until(lambda: sum(received[0].values()) + sum(received[1].values()) >= 400,
              "400 records received", 120)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    for consumer in consumers:
        consumer.commit_sync(30)
    _assert_each_read_once(received, values)
    # each consumer read only its own two partitions: neither was handed all four
    assert sorted(map(len, read_from)) == [2, 2] and not read_from[0] & read_from[1], read_from
    assert sorted(map(sorted, _assigned(cluster.bootstrap_servers, group).values())) == \
        sorted(map(sorted, read_from))
    until(lambda: [start_offset(cluster.bootstrap_servers, group, topic, p)
                   for p in range(4)] == [100] * 4,
          "every record accepted: each share-partition start offset at its log end")


def test_the_first_member_is_not_handed_every_partition_before_the_second_joins(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    """The first member's join starts the partitions' share state: as from Kafka, it learns
    of them at its next heartbeat, by when a consumer started beside it has joined, so it
    does not read every record alone meanwhile (librdkafka's 0172 "mixed ack mode")."""
    topic, group = _topic(cluster, "together", 4), "together"
    _produce(cluster, topic, [f"together-{i}".encode() for i in range(400)], partitions=4)
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="15000", share_heartbeat_interval_ms="5000")
    consumers = [share_consumers(group, topic)]
    until(lambda: len(_assigned(cluster.bootstrap_servers, group)) == 1,
          "the first member in the group", 30, tolerate=(OSError, AssertionError))
    consumers.append(share_consumers(group, topic))
    read_from: list[Counter[int]] = [Counter(), Counter()]
    for _round in range(240):  # each in turn, as 0172 polls them
        if sum(sum(c.values()) for c in read_from) >= 400:
            break
        for index, consumer in enumerate(consumers):
            for message in consumer.poll(0.25):
                partition = message.partition()
                if message.error() is None and partition is not None:
                    read_from[index][partition] += 1
    assert sum(sum(c.values()) for c in read_from) == 400, read_from
    assert [len(c) for c in read_from] == [2, 2] and not set(read_from[0]) & set(read_from[1])


def _assert_each_read_once(received: list[Counter[bytes]], values: list[bytes]) -> None:
    both = received[0] + received[1]
    assert set(both) == set(values)
    assert max(both.values()) == 1, [v for v, n in both.items() if n > 1][:5]


def _poll_one(consumer: ShareConsumer, timeout: float = 30.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        messages = [m for m in consumer.poll(0.5) if m.error() is None]
        if messages:
            return messages
    raise AssertionError(f"no record within {timeout} s")


def test_a_released_record_comes_back_a_rejected_one_never(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    topic, group = _topic(cluster, "release-reject"), "release-reject"
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest")
    _produce(cluster, topic, [b"released", b"rejected", b"accepted"])
    consumer = share_consumers(group, topic, **{"share.acknowledgement.mode": "explicit"})
    first = _poll_one(consumer)
    assert [m.value() for m in first] == [b"released", b"rejected", b"accepted"]
    kinds = [AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.ACCEPT]
    for message, kind in zip(first, kinds, strict=True):
        consumer.acknowledge(message, kind)
    consumer.commit_sync(30)
    again = _poll_one(consumer)
    assert [(m.value(), m.offset(), m.delivery_count()) for m in again] == [
        (b"released", first[0].offset(), 2)]
    consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
    consumer.commit_sync(30)
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 3,
          "the rejected and accepted records done with")


def test_a_record_is_archived_after_its_fifth_delivery(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    topic, group = _topic(cluster, "poison"), "poison"
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest")
    _produce(cluster, topic, [b"poison"])
    consumer = share_consumers(group, topic, **{"share.acknowledgement.mode": "explicit"})
    counts = []
    for _delivery in range(5):
        [message] = _poll_one(consumer)
        counts.append(message.delivery_count())
        consumer.acknowledge(message, AcknowledgeType.RELEASE)
        consumer.commit_sync(30)
    assert counts == [1, 2, 3, 4, 5]
    _produce(cluster, topic, [b"after"])
    [message] = _poll_one(consumer)  # the poison record is not delivered a sixth time
    assert (message.value(), message.offset(), message.delivery_count()) == (b"after", 1, 1)
    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    consumer.commit_sync(30)
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 2,
          "the archived and accepted records done with")


HOLDER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import ShareConsumer
    consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([sys.argv[3]])
    while True:
        held = [m.offset() for m in consumer.poll(0.5) if m.error() is None]
        if held:
            print(" ".join(map(str, held)), flush=True)
            time.sleep(3600)  # holds the records, never acknowledging them
""")


def test_records_held_by_a_killed_consumer_are_redelivered_after_the_lock_expires(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    topic, group = _topic(cluster, "held"), "held"
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest")
    _produce(cluster, topic, [f"held-{i}".encode() for i in range(5)])
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, cluster.bootstrap_servers, group,
                               topic], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        held = [int(offset) for offset in holder.stdout.readline().split()]
        assert held == [0, 1, 2, 3, 4]
    finally:
        holder.kill()
        holder.wait(30)
    survivor = share_consumers(group, topic, **{"share.acknowledgement.mode": "explicit"})
    redelivered: dict[int, int] = {}
    while len(redelivered) < 5:
        for message in _poll_one(survivor, 60):
            redelivered[message.offset()] = message.delivery_count()
            survivor.acknowledge(message, AcknowledgeType.ACCEPT)
        survivor.commit_sync(30)
    assert redelivered == dict.fromkeys(held, 2)
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 5,
          "the redelivered records accepted")


def test_list_groups_reports_share_groups(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    from kafka import KafkaAdminClient

    topic, group = _topic(cluster, "listed"), "listed-share-group"
    share_consumers(group, topic)
    wait_assigned(cluster.bootstrap_servers, group, 1)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups(types_filter=["share"])}
        assert listed[group]["group_type"] == "share"
        assert listed[group]["group_state"] == "Stable"
        assert all(g["group_type"] == "share" for g in listed.values())
        assert group not in {g["group_id"] for g in admin.list_groups(types_filter=["classic"])}
    finally:
        admin.close()
