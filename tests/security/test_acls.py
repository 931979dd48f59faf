"""Authorization with Kafka's ACL model on a running broker: for each API the issue lists,
allowed, denied, and denied-wins-over-allowed; super users; a topic without ACLs closed;
ACLs created, described and deleted through the admin APIs (kafkalite, confluent-kafka) and
kept in the metadata store (a restart keeps them) or in ZooKeeper's /kafka-acl."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from kafkalite import AdminClient
from kafkalite.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePatternFilter,
    ResourceType,
)
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
)
from kafkalite.protocol.errors import (
    MemberIdRequiredError as MemberIdRequired,
)
from kafkalite_server import EmbeddedCluster
from tests.conftest import WireClient
from tests.security.authorized import AUTHORIZER, USERS, acl, admin_client, login
from tests.unit.log.log_batches import v2_batch


@pytest.fixture(scope="module")
def secured() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        admin = admin_client(cluster)
        admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "secret", "open-no-acl",
                                                         "doomed", "alice-logs")])
        outcome = admin.create_acls([
            acl("User:alice", ACLOperation.WRITE, ResourceType.TOPIC, "orders"),
            acl("User:alice", ACLOperation.READ, ResourceType.TOPIC, "orders"),
            acl("User:alice", ACLOperation.READ, ResourceType.GROUP, "alice-group"),
            acl("User:alice", ACLOperation.ALL, ResourceType.TOPIC, "secret"),
            acl("User:alice", ACLOperation.WRITE, ResourceType.TOPIC, "secret",
                ACLPermissionType.DENY),
            acl("User:alice", ACLOperation.READ, ResourceType.TOPIC, "alice-",
                pattern=ACLResourcePatternType.PREFIXED),
            acl("User:alice", ACLOperation.CREATE, ResourceType.TOPIC, "auto-",
                pattern=ACLResourcePatternType.PREFIXED),
            acl("User:alice", ACLOperation.DELETE, ResourceType.TOPIC, "doomed"),
            acl("User:*", ACLOperation.DESCRIBE, ResourceType.TOPIC, "auto-",
                pattern=ACLResourcePatternType.PREFIXED),
        ])
        assert outcome["failed"] == [] and len(outcome["succeeded"]) == 9
        admin.close()
        yield cluster


def produce(client: WireClient, topic: str) -> int:
    response = client.call(ApiKey.PRODUCE, 8, {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": bytes(v2_batch())}]}]})
    return response["responses"][0]["partition_responses"][0]["error_code"]


def fetch(client: WireClient, topic: str) -> int:
    response = client.call(ApiKey.FETCH, 11, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
             "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    return response["responses"][0]["partitions"][0]["error_code"]


def test_produce_needs_write_and_deny_wins(secured: EmbeddedCluster) -> None:
    alice, bob = login(secured, "alice"), login(secured, "bob")
    assert produce(alice, "orders") == 0
    assert produce(bob, "orders") == TopicAuthorizationFailedError.errno
    assert produce(alice, "secret") == TopicAuthorizationFailedError.errno  # DENY wins
    assert produce(alice, "open-no-acl") == TopicAuthorizationFailedError.errno  # closed
    assert produce(login(secured, "admin"), "open-no-acl") == 0  # super user


def test_fetch_needs_read(secured: EmbeddedCluster) -> None:
    alice, bob = login(secured, "alice"), login(secured, "bob")
    assert fetch(alice, "orders") == 0
    assert fetch(alice, "secret") == 0  # ALL allows Read; only Write is denied
    assert fetch(alice, "alice-logs") == 0  # a PREFIXED ACL
    assert fetch(bob, "orders") == TopicAuthorizationFailedError.errno
    assert fetch(alice, "open-no-acl") == TopicAuthorizationFailedError.errno


def test_group_apis_need_read_on_the_group(secured: EmbeddedCluster) -> None:
    alice, bob = login(secured, "alice"), login(secured, "bob")
    body = {"group_id": "alice-group", "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000, "member_id": "", "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}
    deadline = time.monotonic() + 20
    while alice.call(ApiKey.FIND_COORDINATOR, 2, {"key": "alice-group", "key_type": 0})[
            "error_code"] and time.monotonic() < deadline:
        time.sleep(0.1)
    # Authorized: the coordinator answers (v5 asks a new member to rejoin with its id).
    assert alice.call(ApiKey.JOIN_GROUP, 5, body)["error_code"] in (0, MemberIdRequired.errno)
    assert bob.call(ApiKey.JOIN_GROUP, 5, body)["error_code"] == \
        GroupAuthorizationFailedError.errno
    heartbeat = {"group_id": "alice-group", "generation_id": 1, "member_id": "x",
                 "group_instance_id": None}
    assert bob.call(ApiKey.HEARTBEAT, 3, heartbeat)["error_code"] == \
        GroupAuthorizationFailedError.errno
    commit = bob.call(ApiKey.OFFSET_COMMIT, 7, {
        "group_id": "alice-group", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
             "committed_metadata": None}]}]})
    assert commit["topics"][0]["partitions"][0]["error_code"] == \
        GroupAuthorizationFailedError.errno


def test_metadata_lists_only_describable_topics_and_auto_create_needs_create(
        secured: EmbeddedCluster) -> None:
    alice, bob = login(secured, "alice"), login(secured, "bob")
    body = {"topics": None, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}
    listed = {t["name"] for t in alice.call(ApiKey.METADATA, 8, body)["topics"]}
    assert {"orders", "secret", "alice-logs", "doomed"} <= listed
    assert "open-no-acl" not in listed
    assert {t["name"] for t in bob.call(ApiKey.METADATA, 8, body)["topics"]} == set()
    # Everyone may see auto-* topics; only alice may create them.
    name = f"auto-{uuid.uuid4().hex[:8]}"
    wanted = {**body, "topics": [{"name": name}], "allow_auto_topic_creation": True}
    assert bob.call(ApiKey.METADATA, 8, wanted)["topics"][0]["error_code"] == \
        TopicAuthorizationFailedError.errno
    # Created: LEADER_NOT_AVAILABLE (5) until the controller has elected its leader.
    assert alice.call(ApiKey.METADATA, 8, wanted)["topics"][0]["error_code"] in (0, 5)
    deadline = time.monotonic() + 20
    while alice.call(ApiKey.METADATA, 8, wanted)["topics"][0]["error_code"] and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert alice.call(ApiKey.METADATA, 8, wanted)["topics"][0]["error_code"] == 0


def test_delete_topics_needs_delete(secured: EmbeddedCluster) -> None:
    alice, bob = login(secured, "alice"), login(secured, "bob")
    body = {"topic_names": ["doomed"], "timeout_ms": 5000}
    assert bob.call(ApiKey.DELETE_TOPICS, 3, body)["responses"][0]["error_code"] == \
        TopicAuthorizationFailedError.errno
    assert alice.call(ApiKey.DELETE_TOPICS, 3, body)["responses"][0]["error_code"] == 0


def test_inter_broker_requests_need_cluster_action(secured: EmbeddedCluster) -> None:
    body = {"controller_id": 0, "controller_epoch": 99, "ungrouped_partition_states": [],
            "live_brokers": []}
    assert login(secured, "alice").call(ApiKey.UPDATE_METADATA, 4, body)["error_code"] == \
        ClusterAuthorizationFailedError.errno


def test_acl_admin_apis_need_cluster_permissions_and_filter(secured: EmbeddedCluster) -> None:
    alice = login(secured, "alice")
    describe = {"resource_type_filter": 1, "resource_name_filter": None,
                "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                "operation": 1, "permission_type": 1}
    assert alice.call(ApiKey.DESCRIBE_ACLS, 1, describe)["error_code"] == \
        ClusterAuthorizationFailedError.errno
    admin = admin_client(secured)
    try:
        alices, _ = admin.describe_acls(ACLFilter(
            "User:alice", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, "secret", ACLResourcePatternType.ANY)))
        assert {(a.operation, a.permission_type) for a in alices} == {
            (ACLOperation.ALL, ACLPermissionType.ALLOW),
            (ACLOperation.WRITE, ACLPermissionType.DENY)}
        matching, _ = admin.describe_acls(ACLFilter(
            None, None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, "alice-logs",
                                  ACLResourcePatternType.MATCH)))
        assert [a.resource_pattern.resource_name for a in matching] == ["alice-"]
        temporary = acl("User:bob", ACLOperation.READ, ResourceType.TOPIC, "orders")
        assert admin.create_acls([temporary])["succeeded"] == [temporary]
        assert fetch(login(secured, "bob"), "orders") == 0
        ((_, deleted, error),) = admin.delete_acls([ACLFilter(
            "User:bob", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))])
        assert error is None and [a for a, _ in deleted] == [temporary]
        assert fetch(login(secured, "bob"), "orders") == TopicAuthorizationFailedError.errno
        bad = admin.create_acls([acl("alice-without-type", ACLOperation.READ,
                                     ResourceType.TOPIC, "x")])
        assert len(bad["failed"]) == 1
    finally:
        admin.close()


def test_acls_survive_a_restart_and_answer_security_disabled_without_authorizer(
        tmp_path) -> None:  # type: ignore[no-untyped-def]
    with EmbeddedCluster(data_dir=tmp_path, config=AUTHORIZER) as cluster:
        admin = admin_client(cluster)
        admin.create_acls([acl("User:carol", ACLOperation.READ, ResourceType.GROUP, "g")])
        admin.close()
    with EmbeddedCluster(data_dir=tmp_path, config=AUTHORIZER) as cluster:
        admin = admin_client(cluster)
        found, _ = admin.describe_acls(ACLFilter(
            "User:carol", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
        admin.close()
        assert [(a.resource_pattern.resource_name, a.operation) for a in found] == [
            ("g", ACLOperation.READ)]
    with EmbeddedCluster() as plain:
        admin = AdminClient(bootstrap_servers=plain.bootstrap_servers)
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                          ResourcePatternFilter(ResourceType.ANY, None,
                                                                ACLResourcePatternType.ANY)))
        admin.close()


def test_zookeeper_mode_keeps_acls_and_users_in_kafkas_nodes() -> None:
    import json

    from kafkalite.admin import UserScramCredentialUpsertion

    with EmbeddedCluster(num_brokers=2, config=AUTHORIZER) as cluster:
        admin = admin_client(cluster)
        admin.create_acls([acl("User:dave", ACLOperation.WRITE, ResourceType.TOPIC, "zk-t"),
                           acl("User:dave", ACLOperation.READ, ResourceType.TOPIC, "zk-",
                               pattern=ACLResourcePatternType.PREFIXED)])
        assert admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("dave", "SCRAM-SHA-512", "pw")]) == {"dave": None}
        admin.close()
        store = cluster.brokers[0].membership.require_store()
        literal = json.loads(store.get("/kafka-acl/Topic/zk-t")[0])
        assert literal["acls"] == [{"principal": "User:dave", "permissionType": "Allow",
                                    "operation": "Write", "host": "*"}]
        assert store.exists("/kafka-acl-extended/prefixed/Topic/zk-") is not None
        user = json.loads(store.get("/config/users/dave")[0])["config"]["SCRAM-SHA-512"]
        assert user.startswith("salt=") and "iterations=4096" in user and "pw" not in user
        # The other broker sees both at once (through the change-notification watch).
        other = cluster.brokers[1].security
        assert any(b.principal == "User:dave" for b in other.store.acls())
        assert other.scram_credential("dave", "SCRAM-SHA-512") is not None


def test_transactional_ids_need_write(secured: EmbeddedCluster) -> None:
    from kafkalite.protocol.errors import TransactionalIdAuthorizationFailedError

    with admin_client(secured) as admin:
        admin.create_acls([acl("User:alice", ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                               "alice-tx")])
    alice, bob = login(secured, "alice"), login(secured, "bob")
    init = {"transactional_id": "alice-tx", "transaction_timeout_ms": 60000,
            "producer_id": -1, "producer_epoch": -1}
    deadline = time.monotonic() + 20
    while alice.call(ApiKey.INIT_PRODUCER_ID, 4, init)["error_code"] and \
            time.monotonic() < deadline:  # the transaction state topic is being created
        alice.call(ApiKey.FIND_COORDINATOR, 2, {"key": "alice-tx", "key_type": 1})
        time.sleep(0.1)
    assert alice.call(ApiKey.INIT_PRODUCER_ID, 4, init)["error_code"] == 0
    assert bob.call(ApiKey.INIT_PRODUCER_ID, 4, init)["error_code"] == \
        TransactionalIdAuthorizationFailedError.errno
    end = {"transactional_id": "alice-tx", "producer_id": 0, "producer_epoch": 0,
           "committed": True}
    assert bob.call(ApiKey.END_TXN, 3, end)["error_code"] == \
        TransactionalIdAuthorizationFailedError.errno
    # An idempotent producer (no transactional id) needs IdempotentWrite on the Cluster or
    # Write on some topic: alice may write orders, bob may write nowhere.
    idempotent = {**init, "transactional_id": None}
    assert alice.call(ApiKey.INIT_PRODUCER_ID, 4, idempotent)["error_code"] == 0
    assert bob.call(ApiKey.INIT_PRODUCER_ID, 4, idempotent)["error_code"] == \
        ClusterAuthorizationFailedError.errno


def test_group_listing_describing_and_deleting_follow_group_acls(
        secured: EmbeddedCluster) -> None:
    with admin_client(secured) as admin:
        admin.create_acls([acl("User:bob", ACLOperation.DESCRIBE, ResourceType.GROUP,
                               "bob-", pattern=ACLResourcePatternType.PREFIXED)])
    alice, bob = login(secured, "alice"), login(secured, "bob")
    deadline = time.monotonic() + 20
    while alice.call(ApiKey.FIND_COORDINATOR, 2, {"key": "alice-group", "key_type": 0})[
            "error_code"] and time.monotonic() < deadline:
        time.sleep(0.1)
    join = {"group_id": "alice-group", "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000, "member_id": "", "group_instance_id": None,
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}
    alice.call(ApiKey.JOIN_GROUP, 3, join)  # v3: joins at once, the group exists
    listed = {g["group_id"] for g in bob.call(ApiKey.LIST_GROUPS, 2, {})["groups"]}
    assert "alice-group" not in listed
    admin_listed = {g["group_id"] for g in login(secured, "admin").call(
        ApiKey.LIST_GROUPS, 2, {})["groups"]}
    assert "alice-group" in admin_listed
    described = bob.call(ApiKey.DESCRIBE_GROUPS, 4, {
        "groups": ["alice-group", "bob-team"], "include_authorized_operations": False})
    errors = {g["group_id"]: g["error_code"] for g in described["groups"]}
    assert errors == {"alice-group": GroupAuthorizationFailedError.errno, "bob-team": 0}
    deleted = bob.call(ApiKey.DELETE_GROUPS, 1, {"groups_names": ["alice-group"]})
    assert deleted["results"] == [{"group_id": "alice-group",
                                   "error_code": GroupAuthorizationFailedError.errno}]


def test_replication_runs_under_the_authorizer() -> None:
    """Followers log in over the SASL inter-broker listener as User:admin, which super.users
    lets through (ClusterAction); acks=all then needs the whole ISR. (Were the brokers'
    principal not allowed ClusterAction, the followers would be refused and this produce
    would time out.)"""
    from kafkalite import Producer

    config = {**AUTHORIZER, "default.replication.factor": "3", "min.insync.replicas": "3"}
    with EmbeddedCluster(num_brokers=3, config=config) as cluster:
        with admin_client(cluster) as admin:
            admin.create_topics([NewTopic("replicated", 1, 3)])
            admin.create_acls([acl("User:alice", ACLOperation.WRITE, ResourceType.TOPIC,
                                   "replicated")])
        producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username="alice", sasl_plain_password=USERS["alice"],
                            acks="all", max_block_ms=20_000)
        try:
            assert producer.send("replicated", b"everywhere").get(30).offset == 0
        finally:
            producer.close()


def test_librdkafka_manages_scram_users() -> None:
    """confluent-kafka's AlterUserScramCredentials ends its body with a second empty tag
    section; Kafka ignores such trailing bytes, and so must we (librdkafka's own test 0081
    found the connection closed)."""
    from confluent_kafka.admin import AdminClient as ConfluentAdmin
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        peer = ConfluentAdmin({
            "bootstrap.servers": cluster.brokers[0].address("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "admin", "sasl.password": USERS["admin"]})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10000)
        futures = peer.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("erin", info, b"secret", b"salt")], request_timeout=10)
        futures["erin"].result()
        description = peer.describe_user_scram_credentials(["erin"], request_timeout=10)
        infos = description["erin"].result().scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in infos] == [
            (ScramMechanism.SCRAM_SHA_256, 10000)]
        peer.alter_user_scram_credentials(
            [UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)],
            request_timeout=10)["erin"].result()
