"""DescribeTopicPartitions (75) and the ACL APIs' v3, on a broker with Kafka's authorizer:
paging with the cursor, and what a principal without Describe on a topic gets."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient

from kafkalite.admin import ACL, ResourcePattern
from kafkalite.protocol import ApiKey
from kafkalite.protocol.acl_codes import (
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourceType,
)
from kafkalite.protocol.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server import EmbeddedCluster
from tests.conftest import WireClient
from tests.security.authorized import AUTHORIZER, SASL, USERS, admin_client, login

ZERO = uuid.UUID(int=0)
SUFFIX = uuid.uuid4().hex[:6]
WIDE, NARROW = f"dtp-a-{SUFFIX}", f"dtp-b-{SUFFIX}"
"""Three partitions and two; alice may describe only WIDE."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(1, config=AUTHORIZER) as started:
        started.create_topic(WIDE, 3, 1)
        started.create_topic(NARROW, 2, 1)
        admin = admin_client(started)
        try:
            admin.create_acls([_binding("User:alice", ACLOperation.DESCRIBE,
                                        ResourceType.TOPIC, WIDE)])
        finally:
            admin.close()
        yield started


def _binding(principal: str, operation: ACLOperation, kind: ResourceType, name: str) -> ACL:
    return ACL(principal, "*", operation, ACLPermissionType.ALLOW,
               ResourcePattern(kind, name, ACLResourcePatternType.LITERAL))


@pytest.fixture
def as_user(cluster: EmbeddedCluster) -> Iterator[Any]:
    opened: list[WireClient] = []

    def connect(user: str) -> WireClient:
        opened.append(login(cluster, user))
        return opened[-1]

    yield connect
    for client in opened:
        client.sock.close()


def _describe(client: WireClient, topics: list[str], limit: int = 2000,
              cursor: tuple[str, int] | None = None) -> dict[str, Any]:
    return client.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {
        "topics": [{"name": name} for name in topics], "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0],
                                               "partition_index": cursor[1]}})


def _pages(answer: dict[str, Any]) -> tuple[list[tuple[str, list[int]]], Any]:
    return ([(t["name"], [p["partition_index"] for p in t["partitions"]])
             for t in answer["topics"] if t["name"] in (WIDE, NARROW)],
            answer["next_cursor"])


def test_pages_follow_the_cursor_until_every_partition_is_described(as_user: Any) -> None:
    admin = as_user("admin")
    first = _describe(admin, [NARROW, WIDE], limit=2)
    assert _pages(first) == ([(WIDE, [0, 1])], {"topic_name": WIDE, "partition_index": 2})
    second = _describe(admin, [NARROW, WIDE], limit=2, cursor=(WIDE, 2))
    assert _pages(second) == ([(WIDE, [2]), (NARROW, [0])],
                              {"topic_name": NARROW, "partition_index": 1})
    third = _describe(admin, [NARROW, WIDE], limit=2, cursor=(NARROW, 1))
    assert _pages(third) == ([(NARROW, [1])], None)
    topic = first["topics"][0]
    partition = topic["partitions"][0]
    assert topic["error_code"] == 0 and topic["topic_id"] != ZERO
    assert topic["topic_authorized_operations"] > 0
    assert partition["error_code"] == 0 and partition["leader_id"] == 0
    assert partition["replica_nodes"] == partition["isr_nodes"] == [0]
    assert (partition["eligible_leader_replicas"], partition["last_known_elr"]) == ([], [])


def test_every_topic_when_none_is_named_and_errors_for_missing_or_bad_names(
        as_user: Any) -> None:
    admin = as_user("admin")
    everything = _describe(admin, [])
    names = [topic["name"] for topic in everything["topics"]]
    assert names == sorted(names) and {WIDE, NARROW} <= set(names)
    assert everything["next_cursor"] is None
    missing = _describe(admin, [f"missing-{SUFFIX}", "bad/name"])["topics"]
    assert {t["name"]: (t["error_code"], t["partitions"]) for t in missing} == {
        f"missing-{SUFFIX}": (UnknownTopicOrPartitionError.errno, []),
        "bad/name": (InvalidTopicError.errno, [])}
    outside = _describe(admin, [WIDE], cursor=(NARROW, 0))["topics"]
    negative = _describe(admin, [WIDE], cursor=(WIDE, -1))["topics"]
    assert [t["error_code"] for t in outside + negative] == [InvalidRequestError.errno] * 2


def test_a_principal_without_describe_is_refused_the_topic_and_never_sees_it(
        as_user: Any) -> None:
    alice = as_user("alice")
    named = {t["name"]: t for t in _describe(alice, [WIDE, NARROW])["topics"]}
    assert named[WIDE]["error_code"] == 0 and len(named[WIDE]["partitions"]) == 3
    assert (named[NARROW]["error_code"], named[NARROW]["topic_id"],
            named[NARROW]["partitions"]) == (TopicAuthorizationFailedError.errno, ZERO, [])
    listed = [t["name"] for t in _describe(alice, [])["topics"]]
    assert WIDE in listed and NARROW not in listed
    mallory = as_user("mallory")
    assert [t["error_code"] for t in _describe(mallory, [WIDE, NARROW])["topics"]] \
        == [TopicAuthorizationFailedError.errno] * 2
    assert _describe(mallory, [])["topics"] == []


def test_acl_apis_v3_bind_user_resources(as_user: Any) -> None:
    """v3 adds the USER resource type (KIP-373's delegation-token ACLs)."""
    admin = as_user("admin")
    creation = {"resource_type": ResourceType.USER, "resource_name": "User:alice",
                "resource_pattern_type": ACLResourcePatternType.LITERAL,
                "principal": "User:bob", "host": "*",
                "operation": ACLOperation.DESCRIBE_TOKENS,
                "permission_type": ACLPermissionType.ALLOW}
    created = admin.call(ApiKey.CREATE_ACLS, 3, {"creations": [creation]})
    assert created["results"][0]["error_code"] == 0, created
    user_filter = {"resource_type_filter": ResourceType.USER, "resource_name_filter": None,
                   "pattern_type_filter": ACLResourcePatternType.ANY, "principal_filter": None,
                   "host_filter": None, "operation": ACLOperation.ANY,
                   "permission_type": ACLPermissionType.ANY}
    described = admin.call(ApiKey.DESCRIBE_ACLS, 3, user_filter)
    assert described["error_code"] == 0
    assert [(r["resource_type"], r["resource_name"], [a["principal"] for a in r["acls"]])
            for r in described["resources"]] == [(ResourceType.USER, "User:alice",
                                                  ["User:bob"])]
    refused = as_user("mallory").call(ApiKey.CREATE_ACLS, 3, {"creations": [creation]})
    assert refused["results"][0]["error_code"] == ClusterAuthorizationFailedError.errno
    deleted = admin.call(ApiKey.DELETE_ACLS, 3, {"filters": [user_filter]})
    assert deleted["filter_results"][0]["error_code"] == 0
    assert len(deleted["filter_results"][0]["matching_acls"]) == 1
    assert admin.call(ApiKey.DESCRIBE_ACLS, 3, user_filter)["resources"] == []


def test_kafka_pythons_admin_pages_through_the_topics(cluster: EmbeddedCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[0].address(SASL),
                             security_protocol=SASL, sasl_mechanism="PLAIN",
                             sasl_plain_username="alice", sasl_plain_password=USERS["alice"])
    try:
        first = admin.describe_topic_partitions([WIDE], response_partition_limit=2)
        rest = admin.describe_topic_partitions([WIDE], cursor=first["next_cursor"])
        refused = admin.describe_topic_partitions([NARROW])
    finally:
        admin.close()
    assert [[p["partition_index"] for p in page["topics"][0]["partitions"]]
            for page in (first, rest)] == [[0, 1], [2]]
    assert (first["next_cursor"], rest["next_cursor"]) \
        == ({"topic_name": WIDE, "partition_index": 2}, None)
    assert refused["topics"][0]["error_code"] == TopicAuthorizationFailedError.errno
