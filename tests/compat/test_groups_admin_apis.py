"""Group-side admin APIs with real clients: OffsetDelete (kafka-python), DescribeGroups'
authorized operations (confluent-kafka), FindCoordinator v4 batches, and the answer to a
transactional producer while the broker has no transaction coordinator (confluent-kafka)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AclOperation, AdminClient
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster

pytestmark = pytest.mark.compat


def create_topics(bootstrap: str, **partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, count, 1) for name, count in partitions.items()])
    finally:
        admin.close()


def subscribed_member(bootstrap: str, group: str, topic: str) -> Consumer:
    """A librdkafka member that owns its assignment (the group is Stable) when returned."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "session.timeout.ms": 6000, "enable.auto.commit": False})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment():
        assert time.monotonic() < deadline, "no assignment"
        consumer.poll(0.1)
    return consumer


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


def delete_offsets(bootstrap: str, group: str, *partitions: tuple[str, int]) -> dict[Any, str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        result = admin.delete_group_offsets(group, [TopicPartition(t, p) for t, p in partitions])
    finally:
        admin.close()
    return {(tp.topic, tp.partition): error.__name__ for tp, error in result.items()}


def test_offset_delete_spares_subscribed_topics_and_persists(broker_process: Any) -> None:
    bootstrap = broker_process.bootstrap_servers
    create_topics(bootstrap, consumed=2, abandoned=2)
    member = subscribed_member(bootstrap, "od-group", "consumed")
    try:
        member.commit(
            offsets=[RdTopicPartition("consumed", 0, 5), RdTopicPartition("consumed", 1, 6),
                     RdTopicPartition("abandoned", 0, 7), RdTopicPartition("abandoned", 1, 8)],
            asynchronous=False,
        )

        while_active = delete_offsets(
            bootstrap, "od-group", ("consumed", 0), ("abandoned", 0), ("no-such-topic", 0)
        )

        assert while_active == {
            ("consumed", 0): "GroupSubscribedToTopicError",
            ("abandoned", 0): "NoError",
            ("no-such-topic", 0): "UnknownTopicOrPartitionError",
        }
        assert committed(bootstrap, "od-group") == {
            ("consumed", 0): 5, ("consumed", 1): 6, ("abandoned", 1): 8,
        }
    finally:
        member.close()
    # The group is Empty now: every offset may go.
    assert delete_offsets(bootstrap, "od-group", ("consumed", 1)) == {("consumed", 1): "NoError"}

    broker_process.kill()  # the deletions are tombstones in __consumer_offsets
    broker_process.start()

    assert committed(bootstrap, "od-group") == {("consumed", 0): 5, ("abandoned", 1): 8}


def test_offset_delete_of_an_unknown_group(cluster: EmbeddedCluster,
                                           wire: Callable[[str], Any]) -> None:
    create_topics(cluster.bootstrap_servers, some=1)
    # kafka-python's admin does not ask again while the offsets topic is being created.
    assert wire(cluster.bootstrap_servers).find_coordinator("never-seen")["error_code"] == 0
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        with pytest.raises(Exception, match="GroupIdNotFound"):
            admin.delete_group_offsets("never-seen", [TopicPartition("some", 0)])
    finally:
        admin.close()


def test_describe_groups_reports_authorized_operations_when_asked(
    cluster: EmbeddedCluster,
) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topics(bootstrap, described=1)
    member = subscribed_member(bootstrap, "ops-group", "described")
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        [asked] = [f.result() for f in admin.describe_consumer_groups(
            ["ops-group"], include_authorized_operations=True).values()]
        [plain] = [f.result() for f in admin.describe_consumer_groups(["ops-group"]).values()]
    finally:
        member.close()
    assert set(asked.authorized_operations) == {
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,  # group configs (4.0)
    }
    assert plain.authorized_operations is None  # not asked: the field says "not provided"


def test_find_coordinator_v4_answers_each_key(
    cluster: EmbeddedCluster, wire: Callable[[str], Any]
) -> None:
    client = wire(cluster.bootstrap_servers)
    client.find_coordinator("g-one")  # creates the offsets topic and waits for its leaders
    groups = client.call(ApiKey.FIND_COORDINATOR, 4,
                         {"key_type": 0, "coordinator_keys": ["g-one", "g-two"]})
    assert [(c["key"], c["error_code"], c["node_id"]) for c in groups["coordinators"]] == [
        ("g-one", 0, 0), ("g-two", 0, 0),
    ]
    port = int(cluster.bootstrap_servers.rsplit(":", 1)[1])
    assert {c["port"] for c in groups["coordinators"]} == {port}
    client.find_coordinator("tx", key_type=1)
    transactional = client.call(ApiKey.FIND_COORDINATOR, 4,
                                {"key_type": 1, "coordinator_keys": ["tx"]})
    [entry] = transactional["coordinators"]
    assert (entry["key"], entry["error_code"], entry["port"]) == ("tx", 0, port)

