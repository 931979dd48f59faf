"""The APIs that checked nothing, or skipped the topic or the transactional id: for each,
the request of a principal without the ACL is refused with Kafka's authorization error and
changes nothing, and the same request from a principal with the ACL is served.

Raw requests throughout: client libraries refuse some of these before sending (a topic
they cannot see), and the point is what the broker answers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from polling import until

from kafkalite import Producer
from kafkalite.admin import ACLOperation, ACLResourcePatternType, NewTopic, ResourceType
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    OperationNotAttemptedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from kafkalite.records import RecordBatchBuilder
from kafkalite_server import EmbeddedCluster
from tests.conftest import WireClient
from tests.security.authorized import (
    AUTHORIZER,
    acl,
    admin_client,
    client_settings,
    login,
)

TOPIC_DENIED = TopicAuthorizationFailedError.errno
GROUP_DENIED = GroupAuthorizationFailedError.errno
CLUSTER_DENIED = ClusterAuthorizationFailedError.errno
TXN_DENIED = TransactionalIdAuthorizationFailedError.errno
RECORDS = 10
LATEST = -1


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    """orders: alice may read and write it; payroll: only the admin. bob may describe the
    Cluster and write orders, nothing else; mallory has no ACL at all."""
    config = {**AUTHORIZER, "transaction.state.log.num.partitions": "1"}
    with EmbeddedCluster(config=config) as cluster:
        with admin_client(cluster) as admin:
            admin.create_topics([NewTopic("orders", 1, 1), NewTopic("payroll", 1, 1)])
            admin.create_acls([
                acl("User:alice", ACLOperation.READ, ResourceType.TOPIC, "orders"),
                acl("User:alice", ACLOperation.WRITE, ResourceType.TOPIC, "orders"),
                acl("User:alice", ACLOperation.READ, ResourceType.GROUP, "alice-group"),
                acl("User:alice", ACLOperation.DELETE, ResourceType.GROUP, "alice-group"),
                acl("User:alice", ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                    "alice-", pattern=ACLResourcePatternType.PREFIXED),
                acl("User:bob", ACLOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster"),
                acl("User:bob", ACLOperation.WRITE, ResourceType.TOPIC, "orders"),
                acl("User:bob", ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "bob-tx"),
            ])
        producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                            acks="all", **client_settings("admin"))
        for topic in ("orders", "payroll"):
            for i in range(RECORDS):
                producer.send(topic, f"{topic}-{i}".encode())
        producer.flush(30)
        producer.close()
        yield cluster


def list_offsets(client: WireClient, topic: str, replica_id: int = -1) -> dict[str, Any]:
    answer = client.call(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": replica_id, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": LATEST}]}]})
    return dict(answer["topics"][0]["partitions"][0])


def high_watermark(cluster: EmbeddedCluster, topic: str) -> int:
    result = list_offsets(login(cluster, "admin"), topic)
    assert result["error_code"] == 0
    return int(result["offset"])


def test_list_offsets_needs_describe_and_a_replica_needs_cluster_action(
        cluster: EmbeddedCluster) -> None:
    alice = login(cluster, "alice")
    assert list_offsets(login(cluster, "mallory"), "orders")["error_code"] == TOPIC_DENIED
    assert list_offsets(alice, "payroll")["error_code"] == TOPIC_DENIED
    allowed = list_offsets(alice, "orders")
    assert (allowed["error_code"], allowed["offset"]) == (0, RECORDS)
    # Claiming to be replica 0 needs ClusterAction, which only the brokers' principal has.
    assert list_offsets(alice, "orders", replica_id=0)["error_code"] == CLUSTER_DENIED
    assert list_offsets(login(cluster, "admin"), "orders", replica_id=0)["error_code"] == 0


def test_offset_for_leader_epoch_needs_describe_and_a_replica_needs_cluster_action(
        cluster: EmbeddedCluster) -> None:
    def end_offset(user: str, topic: str, replica_id: int = -1) -> dict[str, Any]:
        answer = login(cluster, user).call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, {
            "replica_id": replica_id, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
        return dict(answer["topics"][0]["partitions"][0])

    assert end_offset("mallory", "orders")["error_code"] == TOPIC_DENIED
    assert end_offset("alice", "payroll")["error_code"] == TOPIC_DENIED
    allowed = end_offset("alice", "orders")
    assert (allowed["error_code"], allowed["end_offset"]) == (0, RECORDS)
    assert end_offset("alice", "orders", replica_id=0)["error_code"] == CLUSTER_DENIED
    assert end_offset("admin", "orders", replica_id=0)["error_code"] == 0


def test_describe_log_dirs_needs_describe_on_the_cluster_and_leaks_no_path(
        cluster: EmbeddedCluster) -> None:
    data_dir = str(cluster.data_dir)
    everything = {"topics": None}
    for version in (1, 4):  # v1 has no error code: the answer is simply empty
        client = login(cluster, "mallory")
        client.send(ApiKey.DESCRIBE_LOG_DIRS, version, everything)
        raw = client.receive_frame()
        assert data_dir.encode() not in raw
    refused = login(cluster, "mallory").call(ApiKey.DESCRIBE_LOG_DIRS, 4, everything)
    assert (refused["error_code"], refused["results"]) == (CLUSTER_DENIED, [])
    allowed = login(cluster, "bob").call(ApiKey.DESCRIBE_LOG_DIRS, 4, everything)
    assert allowed["error_code"] == 0
    assert [r["log_dir"].startswith(data_dir) for r in allowed["results"]] == [True]


def test_describe_producers_needs_read_on_the_topic(cluster: EmbeddedCluster) -> None:
    def describe(user: str, topic: str) -> dict[str, Any]:
        answer = login(cluster, user).call(ApiKey.DESCRIBE_PRODUCERS, 0, {
            "topics": [{"name": topic, "partition_indexes": [0]}]})
        return dict(answer["topics"][0]["partitions"][0])

    refused = describe("mallory", "orders")
    assert (refused["error_code"], refused["active_producers"]) == (TOPIC_DENIED, [])
    assert describe("alice", "payroll")["error_code"] == TOPIC_DENIED
    allowed = describe("alice", "orders")
    assert allowed["error_code"] == 0 and allowed["active_producers"]  # the admin's producer


def find_coordinator(client: WireClient, key: str, key_type: int) -> dict[str, Any]:
    """FindCoordinator v3, asked again while the coordinator is not there yet."""
    answer: dict[str, Any] = {}
    for _attempt in range(200):
        answer = client.call(ApiKey.FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})
        if answer["error_code"] != CoordinatorNotAvailableError.errno:
            break
        time.sleep(0.1)
    return answer


def test_find_coordinator_needs_describe_and_creates_nothing_when_refused() -> None:
    with EmbeddedCluster(config=AUTHORIZER) as fresh:
        with admin_client(fresh) as admin:
            admin.create_acls([
                acl("User:alice", ACLOperation.READ, ResourceType.GROUP, "alice-group"),
                acl("User:alice", ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                    "alice-tx")])
        mallory = login(fresh, "mallory")
        assert find_coordinator(mallory, "alice-group", 0)["error_code"] == GROUP_DENIED
        assert find_coordinator(mallory, "alice-tx", 1)["error_code"] == TXN_DENIED
        batched = mallory.call(ApiKey.FIND_COORDINATOR, 4, {
            "key_type": 0, "coordinator_keys": ["alice-group", "other"]})
        assert [c["error_code"] for c in batched["coordinators"]] == [GROUP_DENIED] * 2
        # Nothing was created for the refused requests: no internal topic exists yet.
        cache = fresh.brokers[0].metadata_cache
        assert cache.partitions_of("__consumer_offsets") is None
        assert cache.partitions_of("__transaction_state") is None

        alice = login(fresh, "alice")
        assert find_coordinator(alice, "alice-group", 0)["error_code"] == 0
        assert find_coordinator(alice, "alice-tx", 1)["error_code"] == 0
        batched = alice.call(ApiKey.FIND_COORDINATOR, 4, {
            "key_type": 0, "coordinator_keys": ["alice-group", "other"]})
        assert [c["error_code"] for c in batched["coordinators"]] == [0, GROUP_DENIED]


def commit(client: WireClient, offsets: dict[str, int],
           group: str = "alice-group") -> dict[str, int]:
    answer = client.call(ApiKey.OFFSET_COMMIT, 7, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                            "committed_leader_epoch": -1,
                                            "committed_metadata": None}]}
            for topic, offset in offsets.items()]})
    return {t["name"]: t["partitions"][0]["error_code"] for t in answer["topics"]}


def fetch_offsets(client: WireClient, topics: list[str] | None,
                  group: str = "alice-group") -> dict[str, tuple[int, int]]:
    """topic -> (error code, committed offset) for partition 0."""
    answer = client.call(ApiKey.OFFSET_FETCH, 5, {
        "group_id": group, "topics": None if topics is None else [
            {"name": topic, "partition_indexes": [0]} for topic in topics]})
    assert answer["error_code"] == 0, answer
    return {t["name"]: (t["partitions"][0]["error_code"], t["partitions"][0]["committed_offset"])
            for t in answer["topics"]}


def test_offset_commit_fetch_and_delete_check_each_topic(cluster: EmbeddedCluster) -> None:
    admin, alice = login(cluster, "admin"), login(cluster, "alice")
    assert find_coordinator(admin, "alice-group", 0)["error_code"] == 0
    assert commit(admin, {"payroll": 7}) == {"payroll": 0}

    # Read on the group but not on payroll: that partition is refused and keeps its offset.
    assert commit(alice, {"orders": 3, "payroll": 9}) == {"orders": 0, "payroll": TOPIC_DENIED}
    assert fetch_offsets(admin, ["orders", "payroll"]) == {"orders": (0, 3), "payroll": (0, 7)}

    # Fetching: asked by name, payroll is refused; asked for everything, it is left out.
    assert fetch_offsets(alice, ["orders", "payroll"]) == {"orders": (0, 3),
                                                           "payroll": (TOPIC_DENIED, -1)}
    assert fetch_offsets(alice, None) == {"orders": (0, 3)}

    # Deleting (Delete on the group): payroll's offset survives alice's request.
    deleted = alice.call(ApiKey.OFFSET_DELETE, 0, {"group_id": "alice-group", "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}]}
        for topic in ("orders", "payroll")]})
    assert deleted["error_code"] == 0
    assert {t["name"]: t["partitions"][0]["error_code"] for t in deleted["topics"]} == \
        {"orders": 0, "payroll": TOPIC_DENIED}
    assert fetch_offsets(admin, ["orders", "payroll"]) == {"orders": (0, -1),
                                                           "payroll": (0, 7)}


def txn_offset_commit(client: WireClient, transactional_id: str) -> dict[str, int]:
    answer = client.call(ApiKey.TXN_OFFSET_COMMIT, 3, {
        "transactional_id": transactional_id, "group_id": "alice-group", "producer_id": 1,
        "producer_epoch": 0, "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
             "committed_metadata": ""}]} for topic in ("orders", "payroll")]})
    return {t["name"]: t["partitions"][0]["error_code"] for t in answer["topics"]}


def test_txn_offset_commit_checks_the_transactional_id_and_each_topic(
        cluster: EmbeddedCluster) -> None:
    assert txn_offset_commit(login(cluster, "mallory"), "alice-tx") == {
        "orders": TXN_DENIED, "payroll": TXN_DENIED}
    errors = txn_offset_commit(login(cluster, "alice"), "alice-tx")
    assert errors["payroll"] == TOPIC_DENIED
    assert errors["orders"] not in (TOPIC_DENIED, TXN_DENIED)  # past authorization


def transactional_produce(client: WireClient, transactional_id: str | None) -> int:
    builder = RecordBatchBuilder(producer_id=4242, producer_epoch=0, base_sequence=0,
                                 is_transactional=True)
    builder.append(0, None, b"smuggled")
    answer = client.call(ApiKey.PRODUCE, 8, {
        "transactional_id": transactional_id, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": "orders", "partition_data": [
            {"index": 0, "records": builder.build()}]}]})
    return int(answer["responses"][0]["partition_responses"][0]["error_code"])


def test_a_transactional_produce_needs_write_on_its_transactional_id(
        cluster: EmbeddedCluster) -> None:
    """bob may write orders, and bob-tx, but not alice's transactional ids."""
    before = high_watermark(cluster, "orders")
    bob = login(cluster, "bob")
    assert transactional_produce(bob, "alice-tx") == TXN_DENIED
    assert transactional_produce(bob, None) == TXN_DENIED  # transactional, but no id
    assert high_watermark(cluster, "orders") == before

    # The transaction's other requests check the topic and the group as well.
    added = bob.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": "bob-tx", "v3_and_below_producer_id": 4242,
        "v3_and_below_producer_epoch": 0, "v3_and_below_topics": [
            {"name": "orders", "partitions": [0]}, {"name": "payroll", "partitions": [0]}]})
    assert {r["name"]: r["results_by_partition"][0]["partition_error_code"]
            for r in added["results_by_topic_v3_and_below"]} == {
        "orders": OperationNotAttemptedError.errno, "payroll": TOPIC_DENIED}
    offsets = bob.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, {
        "transactional_id": "bob-tx", "producer_id": 4242, "producer_epoch": 0,
        "group_id": "alice-group"})
    assert offsets["error_code"] == GROUP_DENIED

    # alice's own transactional producer (Write on alice-* and on orders) commits.
    producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                        transactional_id="alice-tx", **client_settings("alice"))
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.send("orders", b"committed")
        producer.commit_transaction(30)
    finally:
        producer.close()
    # the record and its commit marker
    until(lambda: high_watermark(cluster, "orders") == before + 2, "alice's transaction")


def test_transactions_are_listed_and_described_only_with_describe_on_the_id(
        cluster: EmbeddedCluster) -> None:
    """Two open transactions: the admin's over orders and payroll, alice's over orders."""
    producers = []
    for user, transactional_id, topics in (("admin", "admin-tx", ("orders", "payroll")),
                                           ("alice", "alice-open", ("orders",))):
        producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                            transactional_id=transactional_id, **client_settings(user))
        producer.init_transactions(30)
        producer.begin_transaction()
        for topic in topics:
            producer.send(topic, b"open").get(30)
        producers.append(producer)
    try:
        def listed(user: str) -> set[str]:
            answer = login(cluster, user).call(ApiKey.LIST_TRANSACTIONS, 1, {
                "state_filters": [], "producer_id_filters": [], "duration_filter": -1})
            return {t["transactional_id"] for t in answer["transaction_states"]}

        assert listed("mallory") == set()
        alices = listed("alice")  # Write on alice-* implies Describe
        assert "alice-open" in alices and all(t.startswith("alice-") for t in alices)
        assert {"admin-tx", "alice-open"} <= listed("admin")

        def describe(user: str, transactional_id: str) -> dict[str, Any]:
            answer = login(cluster, user).call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {
                "transactional_ids": [transactional_id]})
            return dict(answer["transaction_states"][0])

        refused = describe("mallory", "alice-open")
        assert (refused["error_code"], refused["topics"]) == (TXN_DENIED, [])
        assert describe("alice", "admin-tx")["error_code"] == TXN_DENIED
        mine = describe("alice", "alice-open")
        assert (mine["error_code"], mine["transaction_state"]) == (0, "Ongoing")
        assert [t["topic"] for t in mine["topics"]] == ["orders"]

        # Describe on the admin's id shows its transaction, but only the partitions of the
        # topics alice may describe.
        with admin_client(cluster) as admin:
            admin.create_acls([acl("User:alice", ACLOperation.DESCRIBE,
                                   ResourceType.TRANSACTIONAL_ID, "admin-tx")])
        theirs = describe("alice", "admin-tx")
        assert theirs["error_code"] == 0
        assert [t["topic"] for t in theirs["topics"]] == ["orders"]
        assert sorted(t["topic"] for t in describe("admin", "admin-tx")["topics"]) == [
            "orders", "payroll"]
    finally:
        for producer in producers:
            producer.abort_transaction(30)
            producer.close()
