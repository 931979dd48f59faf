"""Committed offsets across consumer restarts, broker SIGKILL, leader moves; commit fencing."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer as RdKafkaConsumer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster
from kafkalite_server.coordinator.hashing import partition_for
from kafkalite_server.group import OFFSETS_TOPIC

pytestmark = pytest.mark.compat

TOPIC = "durable"


def create_topic_and_produce(bootstrap: str, per_partition: int, partitions: int = 2) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        if TOPIC not in admin.list_topics():
            admin.create_topics([NewTopic(TOPIC, partitions, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for partition in range(partitions):
        for i in range(per_partition):
            producer.send(TOPIC, f"{partition}-{i}".encode(), partition=partition)
    producer.flush()
    producer.close()


def group_consumer(bootstrap: str, group: str) -> KafkaConsumer:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    # Metadata first: kafka-python 3.0.12 joining before it knows the topic assigns nothing,
    # rejoins at once, and now and then never processes that second SyncGroup response.
    consumer.topics()
    consumer.subscribe([TOPIC])
    return consumer


def consume(consumer: KafkaConsumer, count: int, timeout: float = 30.0) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(values) < count:
        assert time.monotonic() < deadline, values
        for records in consumer.poll(timeout_ms=100).values():
            values.extend(r.value for r in records)
    return values


def committed_offsets(bootstrap: str, group: str) -> dict[int, tuple[int, str]]:
    """The group's committed offsets, read through kafka-python's admin client (OffsetFetch)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                offsets = admin.list_group_offsets(group)
                return {
                    tp.partition: (meta.offset, meta.metadata)
                    for tp, meta in offsets[group].items()
                }
            except Exception:  # e.g. COORDINATOR_LOAD_IN_PROGRESS right after a restart
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        admin.close()


def test_restarted_group_resumes_from_committed_offsets(cluster: EmbeddedCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic_and_produce(bootstrap, per_partition=5)
    first = RdKafkaConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "resume",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    first.subscribe([TOPIC])
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 10:
        assert time.monotonic() < deadline
        message = first.poll(0.1)
        if message is not None and message.error() is None:
            seen.append(message.value())
    first.commit(asynchronous=False)
    first.close()

    create_topic_and_produce(bootstrap, per_partition=3)
    second = group_consumer(bootstrap, "resume")
    try:
        resumed = consume(second, 6)
        assert sorted(resumed) == sorted(f"{p}-{i}".encode() for p in range(2) for i in range(3))
    finally:
        second.close()


def test_offsets_survive_broker_sigkill(broker_process: Any) -> None:
    bootstrap = broker_process.bootstrap_servers
    create_topic_and_produce(bootstrap, per_partition=4)
    consumer = group_consumer(bootstrap, "survivor")
    consume(consumer, 8)
    consumer.commit()
    consumer.close()
    # A standalone commit (generation -1, no member) goes through the same log.
    standalone = KafkaConsumer(bootstrap_servers=bootstrap, group_id="standalone")
    standalone.commit({TopicPartition(TOPIC, 1): _offset_and_metadata(3, "checkpoint")})
    standalone.close()

    broker_process.kill()
    broker_process.start()

    assert committed_offsets(bootstrap, "survivor") == {0: (4, ""), 1: (4, "")}
    assert committed_offsets(bootstrap, "standalone") == {1: (3, "checkpoint")}
    create_topic_and_produce(bootstrap, per_partition=1)
    resumed = group_consumer(bootstrap, "survivor")
    try:
        assert sorted(consume(resumed, 2)) == [b"0-0", b"1-0"]
    finally:
        resumed.close()


def _offset_and_metadata(offset: int, metadata: str) -> Any:
    from kafka.structs import OffsetAndMetadata

    return OffsetAndMetadata(offset, metadata, -1)


def test_offsets_follow_the_coordinator_when_its_partition_moves(
    cluster_factory: Callable[..., EmbeddedCluster],
) -> None:
    cluster = cluster_factory(num_brokers=2)
    bootstrap = cluster.bootstrap_servers
    create_topic_and_produce(bootstrap, per_partition=2)
    consumer = group_consumer(bootstrap, "mover")
    consume(consumer, 4)
    consumer.commit()
    consumer.close()
    partition = partition_for("mover", 4)  # the test config's offsets.topic.num.partitions
    leader = cluster.partition_state(OFFSETS_TOPIC, partition).leader
    cluster.elect_leader(OFFSETS_TOPIC, partition, 1 - leader)  # both brokers hold a replica
    assert committed_offsets(bootstrap, "mover") == {0: (2, ""), 1: (2, "")}


# -- raw protocol: generation fencing --------------------------------------------------------


def _join(client: Any, member_id: str, version: int = 5) -> int:
    return client.send(
        ApiKey.JOIN_GROUP,
        version,
        {
            "group_id": "fenced",
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 10_000,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )


def _commit(client: Any, generation: int, member_id: str) -> int:
    response = client.call(
        ApiKey.OFFSET_COMMIT,
        7,
        {
            "group_id": "fenced",
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
    return int(response["topics"][0]["partitions"][0]["error_code"])


def test_stale_member_commit_is_fenced(
    cluster: EmbeddedCluster, wire: Callable[[str], Any]
) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic_and_produce(bootstrap, per_partition=1)
    a, b = wire(bootstrap), wire(bootstrap)
    found = a.find_coordinator("fenced", version=2)
    assert found["error_code"] == 0

    _join(a, "")
    _, first = a.receive(ApiKey.JOIN_GROUP, 5)
    assert first["error_code"] == 79  # MEMBER_ID_REQUIRED
    member_a = first["member_id"]
    _join(a, member_a)
    _, joined = a.receive(ApiKey.JOIN_GROUP, 5)
    assert (joined["generation_id"], joined["leader"]) == (1, member_a)
    synced = a.call(
        ApiKey.SYNC_GROUP,
        3,
        {
            "group_id": "fenced",
            "generation_id": 1,
            "member_id": member_a,
            "group_instance_id": None,
            "assignments": [{"member_id": member_a, "assignment": b""}],
        },
    )
    assert synced["error_code"] == 0
    assert _commit(a, 1, member_a) == 0

    _join(b, "", version=3)  # v3: added at once, and parked until the rebalance completes
    heartbeat = a.call(
        ApiKey.HEARTBEAT,
        3,
        {
            "group_id": "fenced",
            "generation_id": 1,
            "member_id": member_a,
            "group_instance_id": None,
        },
    )
    assert heartbeat["error_code"] == 27  # REBALANCE_IN_PROGRESS
    _join(a, member_a)
    _, rejoined = a.receive(ApiKey.JOIN_GROUP, 5)
    _, b_joined = b.receive(ApiKey.JOIN_GROUP, 3)
    assert rejoined["generation_id"] == b_joined["generation_id"] == 2

    assert _commit(a, 1, member_a) == 22  # ILLEGAL_GENERATION: a zombie of generation 1
    assert _commit(a, 2, "someone-else") == 25  # UNKNOWN_MEMBER_ID
    assert _commit(a, -1, "") == 25  # anonymous commits only to a group without members


def test_offsets_topic_created_by_metadata_still_serves_groups(
    cluster: EmbeddedCluster, wire: Callable[[str], Any]
) -> None:
    """A Metadata request may auto-create the offsets topic with the default partition count;
    the coordinator then places groups by that real count, as Kafka does."""
    bootstrap = cluster.bootstrap_servers
    client = wire(bootstrap)
    metadata = client.call(ApiKey.METADATA, 8, {"topics": [{"name": OFFSETS_TOPIC}]})
    [offsets_topic] = metadata["topics"]
    assert offsets_topic["is_internal"] is True
    create_topic_and_produce(bootstrap, per_partition=2)
    consumer = group_consumer(bootstrap, "after-auto-create")
    consume(consumer, 4)
    consumer.commit()
    consumer.close()
    assert committed_offsets(bootstrap, "after-auto-create") == {0: (2, ""), 1: (2, "")}


def test_large_offsets_partition_loads_in_steps_after_a_move(
    cluster_factory: Callable[..., EmbeddedCluster], wire: Callable[[str], Any]
) -> None:
    """A partition over one load chunk replays in the background from the moment its new
    leader takes over: requests get COORDINATOR_LOAD_IN_PROGRESS until it is done, then
    the replayed offsets."""
    cluster = cluster_factory(num_brokers=2)
    create_topic_and_produce(cluster.bootstrap_servers, per_partition=1, partitions=4)
    group = "bulky"
    old = _coordinator_client(cluster, wire, group)
    note = "n" * 4000
    for offset in range(100):  # ~1.6 MB of commits, last value wins
        response = old.call(
            ApiKey.OFFSET_COMMIT,
            2,
            {
                "group_id": group,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "retention_time_ms": -1,
                "topics": [
                    {
                        "name": TOPIC,
                        "partitions": [
                            {
                                "partition_index": p,
                                "committed_offset": offset,
                                "committed_metadata": note,
                            }
                            for p in range(4)
                        ],
                    }
                ],
            },
        )
        assert {p["error_code"] for p in response["topics"][0]["partitions"]} == {0}

    partition = partition_for(group, 4)
    leader = cluster.partition_state(OFFSETS_TOPIC, partition).leader
    target = cluster.broker(1 - leader).endpoint
    cluster.elect_leader(OFFSETS_TOPIC, partition, target.node_id)

    new = wire(f"{target.host}:{target.port}")
    fetch = {"group_id": group, "topics": None}
    # Loading started when the move made the broker leader; it may be done already.
    first = new.call(ApiKey.OFFSET_FETCH, 5, fetch)
    assert first["error_code"] in (0, 14)  # 14: COORDINATOR_LOAD_IN_PROGRESS
    deadline = time.monotonic() + 30
    while (loaded := new.call(ApiKey.OFFSET_FETCH, 5, fetch))["error_code"] == 14:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert loaded["error_code"] == 0
    [topic] = loaded["topics"]
    assert {(p["committed_offset"], p["metadata"]) for p in topic["partitions"]} == {(99, note)}
    assert len(topic["partitions"]) == 4


def _coordinator_client(cluster: EmbeddedCluster, wire: Callable[[str], Any], group: str) -> Any:
    lookup = wire(cluster.bootstrap_servers)
    found = lookup.find_coordinator(group)
    assert found["error_code"] == 0
    return wire(f"{found['host']}:{found['port']}")
