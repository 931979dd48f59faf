"""Authorized operations (KIP-430) under the authorizer: Metadata, DescribeCluster and
DescribeGroups report only what the calling principal may do, with Kafka's implied
operations (READ/WRITE/DELETE/ALTER give DESCRIBE, ALTER_CONFIGS gives DESCRIBE_CONFIGS) and
DENY winning, as confluent-kafka's AdminClient, kafkalite's AdminClient and the wire see it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalite.admin import ACLOperation, ACLPermissionType, NewTopic, ResourceType
from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster
from tests.security.authorized import AUTHORIZER, USERS, acl, admin_client, login

TIMEOUT = 30
TOPIC_OPS = {"READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS",
             "ALTER_CONFIGS"}
CLUSTER_OPS = {"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
               "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE"}
GROUP_OPS = {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}

ALICE_TOPICS = {
    "ops-read": {"READ", "DESCRIBE"},
    "ops-write-configs": {"WRITE", "DESCRIBE", "ALTER_CONFIGS", "DESCRIBE_CONFIGS"},
    "ops-all-but-delete": TOPIC_OPS - {"DELETE"},
}
"""What alice may do on each topic, given the ACLs of the fixture."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=AUTHORIZER) as running:
        with admin_client(running) as admin:
            admin.create_topics([NewTopic(name, 1, 1) for name in ALICE_TOPICS])
            outcome = admin.create_acls([
                acl("User:alice", ACLOperation.READ, ResourceType.TOPIC, "ops-read"),
                acl("User:alice", ACLOperation.WRITE, ResourceType.TOPIC, "ops-write-configs"),
                acl("User:alice", ACLOperation.ALTER_CONFIGS, ResourceType.TOPIC,
                    "ops-write-configs"),
                acl("User:alice", ACLOperation.ALL, ResourceType.TOPIC, "ops-all-but-delete"),
                acl("User:alice", ACLOperation.DELETE, ResourceType.TOPIC, "ops-all-but-delete",
                    ACLPermissionType.DENY),
                acl("User:alice", ACLOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster"),
                acl("User:alice", ACLOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER,
                    "kafka-cluster"),
                acl("User:alice", ACLOperation.READ, ResourceType.GROUP, "ops-group"),
                acl("User:alice", ACLOperation.DELETE, ResourceType.GROUP, "ops-group"),
                acl("User:alice", ACLOperation.DESCRIBE, ResourceType.GROUP, "ops-group",
                    ACLPermissionType.DENY),
                acl("User:alice", ACLOperation.READ, ResourceType.GROUP, "ops-group-2"),
            ])
            assert outcome["failed"] == []
        yield running


def _confluent_admin(cluster: EmbeddedCluster, user: str):  # type: ignore[no-untyped-def]
    confluent_admin = pytest.importorskip("confluent_kafka.admin")
    return confluent_admin.AdminClient({
        "bootstrap.servers": cluster.brokers[0].address("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": user, "sasl.password": USERS[user]})


def _names(operations) -> set[str]:  # type: ignore[no-untyped-def]
    return {operation.name for operation in operations}


def test_confluent_describe_topics_and_cluster_see_only_alices_operations(
        cluster: EmbeddedCluster) -> None:
    from confluent_kafka import TopicCollection

    alice = _confluent_admin(cluster, "alice")
    futures = alice.describe_topics(TopicCollection(list(ALICE_TOPICS)),
                                    include_authorized_operations=True)
    seen = {name: _names(future.result(TIMEOUT).authorized_operations)
            for name, future in futures.items()}
    assert seen == ALICE_TOPICS
    described = alice.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    assert _names(described.authorized_operations) == {"DESCRIBE", "IDEMPOTENT_WRITE"}

    admin = _confluent_admin(cluster, "admin")  # a super user may do everything
    futures = admin.describe_topics(TopicCollection(["ops-read"]),
                                    include_authorized_operations=True)
    assert _names(futures["ops-read"].result(TIMEOUT).authorized_operations) == TOPIC_OPS
    described = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    assert _names(described.authorized_operations) == CLUSTER_OPS


def test_kafkalite_admin_reports_the_callers_cluster_and_group_operations(
        cluster: EmbeddedCluster) -> None:
    from kafkalite import AdminClient

    address = cluster.brokers[0].address("SASL_PLAINTEXT")
    with AdminClient(bootstrap_servers=address, security_protocol="SASL_PLAINTEXT",
                     sasl_mechanism="PLAIN", sasl_plain_username="alice",
                     sasl_plain_password=USERS["alice"]) as alice:
        assert set(alice.describe_cluster()["authorized_operations"]) == {
            "DESCRIBE", "IDEMPOTENT_WRITE"}
        # READ implies DESCRIBE for the authorizer's checks, so the group is describable.
        group = alice.describe_groups(["ops-group-2"], include_authorized_operations=True)
        assert set(group["ops-group-2"].authorized_operations or ()) == {"READ", "DESCRIBE"}
        assert alice.describe_groups(["ops-group-2"])["ops-group-2"].authorized_operations \
            is None
    with admin_client(cluster) as admin:
        assert set(admin.describe_cluster()["authorized_operations"]) == CLUSTER_OPS
        group = admin.describe_groups(["ops-group"], include_authorized_operations=True)
        assert set(group["ops-group"].authorized_operations or ()) == GROUP_OPS


def test_wire_metadata_and_describe_groups_bit_fields(cluster: EmbeddedCluster) -> None:
    """The bit fields themselves: a DENY on DESCRIBE removes it even though READ would imply
    it (the group is then not describable, as Kafka answers)."""
    alice = login(cluster, "alice")
    metadata = alice.call(ApiKey.METADATA, 8, {
        "topics": [{"name": name} for name in ALICE_TOPICS], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True})
    expected = {name: sum(1 << ACLOperation[op] for op in ops)
                for name, ops in ALICE_TOPICS.items()}
    assert {t["name"]: t["topic_authorized_operations"] for t in metadata["topics"]} == \
        expected
    assert metadata["cluster_authorized_operations"] == \
        (1 << ACLOperation.DESCRIBE) | (1 << ACLOperation.IDEMPOTENT_WRITE)
    groups = alice.call(ApiKey.DESCRIBE_GROUPS, 4, {
        "groups": ["ops-group", "ops-group-2"], "include_authorized_operations": True})
    by_id = {g["group_id"]: g for g in groups["groups"]}
    assert by_id["ops-group-2"]["authorized_operations"] == \
        (1 << ACLOperation.READ) | (1 << ACLOperation.DESCRIBE)
    assert by_id["ops-group"]["error_code"] != 0  # DENY DESCRIBE wins over READ's implication
