"""AIOKafkaAdminClient against a running broker: topics, partitions, configs, the cluster,
groups and their offsets, deleting records, each in aiokafka's return shapes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import pytest

from kafkalite.aio import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from kafkalite.aio.admin import (
    AIOKafkaAdminClient,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    RecordsToDelete,
)
from kafkalite.aio.errors import (
    InvalidPartitionsError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafkalite.aio.structs import OffsetAndMetadata
from kafkalite.protocol.config_codes import ConfigSourceType
from kafkalite.protocol.consumer_protocol import ConsumerProtocolAssignment
from kafkalite_server import EmbeddedCluster
from tests.conftest import TEST_BROKER_CONFIG

T = TypeVar("T")


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(1, config=TEST_BROKER_CONFIG) as running:
        yield running


def with_admin(cluster: EmbeddedCluster,
               body: Callable[[AIOKafkaAdminClient], Awaitable[T]]) -> T:
    async def main() -> T:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                                    request_timeout_ms=10_000)
        await admin.start()
        try:
            return await body(admin)
        finally:
            await admin.close()

    return asyncio.run(main())


def test_topics_are_created_grown_described_and_deleted(cluster: EmbeddedCluster) -> None:
    async def body(admin: AIOKafkaAdminClient) -> None:
        created = await admin.create_topics([NewTopic("adm-orders", 1, 1),
                                             NewTopic("adm-audit", 2, 1)])
        assert type(created).__name__ == "CreateTopicsResponse_v3"
        assert sorted(created.topic_errors) == [("adm-audit", 0, None), ("adm-orders", 0, None)]
        again = await admin.create_topics([NewTopic("adm-orders", 1, 1)])
        ((name, code, _),) = again.topic_errors
        assert (name, code) == ("adm-orders", TopicAlreadyExistsError.errno)
        assert again.to_object()["topic_errors"][0]["topic"] == "adm-orders"

        grown = await admin.create_partitions({"adm-orders": NewPartitions(3)})
        assert grown.topic_errors == [("adm-orders", 0, None)]
        with pytest.raises(InvalidPartitionsError, match="adm-orders"):
            await admin.create_partitions({"adm-orders": NewPartitions(2)})

        assert {"adm-orders", "adm-audit"} <= set(await admin.list_topics())
        (described,) = await admin.describe_topics(["adm-orders"])
        assert (described["topic"], described["error_code"], described["is_internal"]) == \
            ("adm-orders", 0, False)
        assert [p["partition"] for p in sorted(described["partitions"],
                                               key=lambda p: p["partition"])] == [0, 1, 2]
        assert all(p["leader"] == 0 and p["replicas"] == [0] and p["isr"] == [0]
                   for p in described["partitions"])

        deleted = await admin.delete_topics(["adm-audit", "adm-never-created"])
        assert sorted(deleted.topic_error_codes) == [
            ("adm-audit", 0), ("adm-never-created", UnknownTopicOrPartitionError.errno)]
        assert "adm-audit" not in await admin.list_topics()

    with_admin(cluster, body)


def test_configs_are_altered_and_described(cluster: EmbeddedCluster) -> None:
    async def body(admin: AIOKafkaAdminClient) -> None:
        await admin.create_topics([NewTopic("adm-configs", 1, 1)])
        topic = ConfigResource(ConfigResourceType.TOPIC, "adm-configs",
                               {"retention.ms": "3600000"})
        (altered,) = await admin.alter_configs([topic])
        assert altered.resources == [(0, None, ConfigResourceType.TOPIC, "adm-configs")]

        wanted = ConfigResource(ConfigResourceType.TOPIC, "adm-configs",
                                {"retention.ms": None, "cleanup.policy": None})
        broker = ConfigResource(ConfigResourceType.BROKER, "0")
        on_broker, on_topics = await admin.describe_configs([wanted, broker])
        ((code, _, kind, name, entries),) = on_topics.resources
        assert (code, kind, name) == (0, ConfigResourceType.TOPIC, "adm-configs")
        values = {entry[0]: (entry[1], entry[3]) for entry in entries}
        assert values == {
            "retention.ms": ("3600000", ConfigSourceType.DYNAMIC_TOPIC_CONFIG),
            "cleanup.policy": ("delete", ConfigSourceType.DEFAULT_CONFIG)}
        ((_, _, kind, name, broker_entries),) = on_broker.resources
        assert (kind, name) == (ConfigResourceType.BROKER, "0")
        assert "auto.create.topics.enable" in {entry[0] for entry in broker_entries}

    with_admin(cluster, body)


def test_the_cluster_is_described_from_metadata(cluster: EmbeddedCluster) -> None:
    described = with_admin(cluster, lambda admin: admin.describe_cluster())
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    assert described["controller_id"] == 0
    assert described["cluster_id"]
    assert described["brokers"] == [{"node_id": 0, "host": host, "port": int(port),
                                     "rack": None}]


def test_groups_are_listed_described_and_their_offsets_read(cluster: EmbeddedCluster) -> None:
    topic, group = "adm-grouped", "adm-billing"
    tp = TopicPartition(topic, 0)

    async def join_and_commit() -> None:
        async with AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers) as producer:
            for i in range(3):
                await producer.send_and_wait(topic, b"%d" % i, partition=0)
        async with AIOKafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers,
                                    group_id=group, auto_offset_reset="earliest",
                                    enable_auto_commit=False) as consumer:
            batches = await consumer.getmany(timeout_ms=10_000)
            assert sum(len(records) for records in batches.values()) == 3
            await consumer.commit({tp: OffsetAndMetadata(3, "done")})
            await admin_while_joined()

    async def admin_while_joined() -> None:
        async def body(admin: AIOKafkaAdminClient) -> None:
            assert (group, "consumer") in await admin.list_consumer_groups()
            coordinator = await admin.find_coordinator(group)
            assert coordinator == 0
            (answer,) = await admin.describe_consumer_groups([group])
            ((code, group_id, state, protocol_type, protocol, members),) = answer.groups
            assert (code, group_id, state, protocol_type) == (0, group, "Stable", "consumer")
            assert protocol
            ((_, client_id, _, metadata, assignment),) = members
            assert client_id and isinstance(metadata, bytes)
            assert ConsumerProtocolAssignment.decode(assignment).partitions == [(topic, [0])]
            offsets = await admin.list_consumer_group_offsets(group)
            assert offsets == {tp: OffsetAndMetadata(3, "done")}
            missing = TopicPartition(topic, 7)
            assert await admin.list_consumer_group_offsets(group, partitions=[tp, missing]) \
                == {tp: OffsetAndMetadata(3, "done"), missing: OffsetAndMetadata(-1, "")}

        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                                    request_timeout_ms=10_000)
        await admin.start()
        try:
            await body(admin)
        finally:
            await admin.close()

    with_admin(cluster, lambda admin: admin.create_topics([NewTopic(topic, 1, 1)]))
    asyncio.run(join_and_commit())


def test_records_are_deleted_up_to_an_offset(cluster: EmbeddedCluster) -> None:
    topic = "adm-purged"
    tp = TopicPartition(topic, 0)

    async def body(admin: AIOKafkaAdminClient) -> None:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        async with AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers) as producer:
            for i in range(10):
                await producer.send_and_wait(topic, b"%d" % i, partition=0)
        assert await admin.delete_records({tp: RecordsToDelete(4)}) == {tp: 4}
        with pytest.raises(OffsetOutOfRangeError, match=f"{topic}-0"):
            await admin.delete_records({tp: RecordsToDelete(99)})
        async with AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers) as consumer:
            assert await consumer.beginning_offsets([tp]) == {tp: 4}

    with_admin(cluster, body)
