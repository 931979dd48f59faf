"""Committed offsets do not outlive their topic (Kafka's handleDeletedPartitions).

A group commits on a topic; the topic is deleted and created again with fewer partitions and
more records than the old offsets. The group's consumer (confluent-kafka) reads every record
of the new topic, not those after a stale offset, and ``kafkalite groups describe`` /
``groups reset-offsets`` work in between and afterwards (a stale offset on a partition that no
longer exists made them fail with "no leader known"). Run on a one-broker and a three-broker
EmbeddedCluster, on a standalone ``kafkalite-server``, and after the only replica of the
group's offsets partition was down while the topic went.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite_server import EmbeddedCluster
from kafkalite_server.coordinator.hashing import partition_for
from kafkalite_server.group import OFFSETS_TOPIC
from tests.cli.cli_runner import Cli

pytestmark = pytest.mark.compat

DOOMED = "doomed"
KEPT = "kept"
GROUP = "outlived"


def create(bootstrap: str, topic: str, partitions: int, replication: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication)])[topic].result(30)
    wait_for(lambda: topic in admin.list_topics(timeout=10).topics
             and not admin.list_topics(topic, timeout=10).topics[topic].error,
             f"{topic} created")


def delete(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    wait_for(lambda: topic not in admin.list_topics(timeout=10).topics, f"{topic} deleted")


def produce(bootstrap: str, topic: str, per_partition: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(partitions):
        for n in range(per_partition):
            producer.produce(topic, f"{partition}-{n}".encode(), partition=partition)
    assert producer.flush(30) == 0


def consume_and_commit(bootstrap: str, topics: list[str], count: int) -> list[bytes]:
    """Reads ``count`` records as a member of the group, commits, and leaves."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(topics)
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + 60
        while len(values) < count:
            assert time.monotonic() < deadline, f"read {len(values)} of {count}"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except KafkaException:
            pass
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(0.2)


def describe(cli: Cli) -> dict[str, Any]:
    view: dict[str, Any] = json.loads(cli.ok("groups", "describe", GROUP, "--json"))
    return view


def described_topics(cli: Cli) -> list[str] | str:
    """The topics the group has offsets on, by ``groups describe``; its error if it fails."""
    result = cli("groups", "describe", GROUP, "--json")
    if result.returncode:
        return result.stderr
    return [row["topic"] for row in json.loads(result.stdout)["partitions"]]


def commit_then_delete(bootstrap: str, replication: int) -> None:
    """The group commits 10 records on each of the doomed topic's 2 partitions (and some
    on a topic that stays); then the doomed topic is deleted."""
    create(bootstrap, DOOMED, 2, replication)
    create(bootstrap, KEPT, 1, replication)
    produce(bootstrap, DOOMED, 10, 2)
    produce(bootstrap, KEPT, 3, 1)
    consume_and_commit(bootstrap, [DOOMED, KEPT], 23)
    delete(bootstrap, DOOMED)


def recreate_and_check(bootstrap: str, cli: Cli, replication: int) -> None:
    """The group's offsets of the deleted topic are gone; the re-created topic (1 partition,
    25 records: more than the old offset 10) is read from its first record."""
    deadline = time.monotonic() + 60
    while (described := described_topics(cli)) != [KEPT]:
        assert time.monotonic() < deadline, f"groups describe: {described}"
        time.sleep(0.2)
    create(bootstrap, DOOMED, 1, replication)
    produce(bootstrap, DOOMED, 25, 1)
    view = describe(cli)
    assert [(row["topic"], row["committed"]) for row in view["partitions"]] == [(KEPT, 3)]
    read = consume_and_commit(bootstrap, [DOOMED, KEPT], 25)
    assert sorted(read) == sorted(f"0-{n}".encode() for n in range(25))
    plan = cli.ok("groups", "reset-offsets", GROUP, "--topic", DOOMED, "--to-earliest",
                  "--execute")
    assert [line.split()[:4] for line in plan.splitlines()[1:2]] == [[GROUP, DOOMED, "0", "0"]]


@pytest.mark.parametrize("num_brokers", [1, 3])
def test_a_deleted_topics_offsets_go_and_its_successor_is_read_whole(
        cluster_factory: Callable[..., EmbeddedCluster], num_brokers: int) -> None:
    cluster = cluster_factory(num_brokers)
    cli = Cli(cluster.bootstrap_servers)
    commit_then_delete(cluster.bootstrap_servers, num_brokers)
    recreate_and_check(cluster.bootstrap_servers, cli, num_brokers)


def test_a_standalone_broker_removes_a_deleted_topics_offsets(broker_process: Any) -> None:
    bootstrap = broker_process.bootstrap_servers
    cli = Cli(bootstrap)
    commit_then_delete(bootstrap, 1)
    recreate_and_check(bootstrap, cli, 1)


def test_a_coordinator_that_missed_the_deletion_drops_the_offsets_when_it_loads(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    """The group's offsets partition has one replica, down while the topic is deleted: no
    coordinator saw the deletion. Coming back, that broker loads the partition and drops
    the offsets of the topic the metadata no longer has."""
    cluster = cluster_factory(3, offsets_topic_replication_factor="1")
    bootstrap = cluster.bootstrap_servers
    create(bootstrap, KEPT, 1, 3)
    produce(bootstrap, KEPT, 3, 1)
    consume_and_commit(bootstrap, [KEPT], 3)
    holder = cluster.partition_state(OFFSETS_TOPIC, partition_for(GROUP, 4)).leader
    # The doomed topic stays off the holder, so its re-creation finds no old log there.
    others = [b for b in range(3) if b != holder]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(DOOMED, 2, replica_assignment=[others, others[::-1]])]
                        )[DOOMED].result(30)
    wait_for(lambda: DOOMED in admin.list_topics(timeout=10).topics, "doomed created")
    produce(bootstrap, DOOMED, 10, 2)
    consume_and_commit(bootstrap, [DOOMED, KEPT], 20)
    cluster.kill_broker(holder)
    delete(bootstrap, DOOMED)
    cluster.restart_broker(holder)
    recreate_and_check(bootstrap, Cli(bootstrap), 2)
