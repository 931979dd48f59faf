"""kafkalite.aio against a broker with Kafka's ACL authorizer: a principal with WRITE and
READ on a topic produces and consumes it; one without any ACL is refused with the typed
errors (TopicAuthorizationFailedError) at send and at getmany, naming the topic."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.admin import ACLOperation, ResourceType
from kafkalite.aio import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from kafkalite.aio.admin import (
    AIOKafkaAdminClient,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    RecordsToDelete,
)
from kafkalite.aio.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
from kafkalite_server import EmbeddedCluster
from tests.security.authorized import AUTHORIZER, acl, admin_client, client_settings

TOPIC = "aio-guarded"
TP = TopicPartition(TOPIC, 0)


@pytest.fixture(scope="module")
def secured() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        admin = admin_client(cluster)
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        outcome = admin.create_acls([
            acl("User:alice", ACLOperation.WRITE, ResourceType.TOPIC, TOPIC),
            acl("User:alice", ACLOperation.READ, ResourceType.TOPIC, TOPIC),
            acl("User:bob", ACLOperation.DESCRIBE, ResourceType.TOPIC, TOPIC)])
        assert outcome["failed"] == []
        admin.close()
        yield cluster


def settings(cluster: EmbeddedCluster, user: str) -> dict[str, Any]:
    return {"bootstrap_servers": cluster.brokers[0].address("SASL_PLAINTEXT"),
            "request_timeout_ms": 10_000, **client_settings(user)}


def test_a_principal_with_acls_produces_and_consumes(secured: EmbeddedCluster) -> None:
    async def main() -> list[bytes]:
        async with AIOKafkaProducer(**settings(secured, "alice")) as producer:
            await producer.send_and_wait(TOPIC, b"allowed", partition=0)
        async with AIOKafkaConsumer(auto_offset_reset="earliest",
                                    **settings(secured, "alice")) as consumer:
            consumer.assign([TP])
            batches = await consumer.getmany(TP, timeout_ms=10_000)
            return [m.value for m in batches.get(TP, [])]

    assert asyncio.run(main()) == [b"allowed"]


def test_a_principal_without_acls_is_refused(secured: EmbeddedCluster) -> None:
    async def produce() -> None:
        async with AIOKafkaProducer(**settings(secured, "mallory")) as producer:
            await producer.send_and_wait(TOPIC, b"denied", partition=0)

    async def consume() -> None:
        async with AIOKafkaConsumer(auto_offset_reset="earliest",
                                    **settings(secured, "mallory")) as consumer:
            consumer.assign([TP])
            consumer.seek(TP, 0)
            await consumer.getmany(TP, timeout_ms=10_000)

    with pytest.raises(TopicAuthorizationFailedError, match=TOPIC):
        asyncio.run(asyncio.wait_for(produce(), 30))
    with pytest.raises(TopicAuthorizationFailedError, match=TOPIC):
        asyncio.run(asyncio.wait_for(consume(), 30))


def test_the_admin_of_a_principal_without_acls_gets_typed_refusals(
        secured: EmbeddedCluster) -> None:
    """The broker authorizes each admin request; the asyncio admin reports its refusals
    as aiokafka does (an error code in create_topics' answer) or as typed errors."""

    async def main() -> tuple[Any, Any]:
        admin = AIOKafkaAdminClient(**settings(secured, "mallory"))
        await admin.start()
        try:
            created = await admin.create_topics([NewTopic("aio-mallory", 1, 1)])
            with pytest.raises(TopicAuthorizationFailedError, match=TOPIC):
                await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
            with pytest.raises(GroupAuthorizationFailedError, match="aio-billing"):
                await admin.list_consumer_group_offsets("aio-billing")
            return created.topic_errors, await admin.list_topics()
        finally:
            await admin.close()

    topic_errors, visible = asyncio.run(asyncio.wait_for(main(), 60))
    assert [(name, code) for name, code, _ in topic_errors] == [
        ("aio-mallory", TopicAuthorizationFailedError.errno)]
    assert TOPIC not in visible


def test_deleting_records_needs_delete_on_the_topic(secured: EmbeddedCluster) -> None:
    """bob may describe the topic (so its leader is known) but not delete from it."""

    async def main() -> None:
        admin = AIOKafkaAdminClient(**settings(secured, "bob"))
        await admin.start()
        try:
            await admin.delete_records({TP: RecordsToDelete(0)})
        finally:
            await admin.close()

    with pytest.raises(TopicAuthorizationFailedError, match=f"{TOPIC}-0"):
        asyncio.run(asyncio.wait_for(main(), 60))
