"""The authorization audit: every API the broker registers, sent by a logged-in principal
without any ACL (authorizer on, ``allow.everyone.if.no.acl.found=false``), must answer with
an authorization error, except the few APIs Kafka leaves open, each listed in ``OPEN`` with
why and with what its answer may show.

The APIs come from the broker's own handler registry, so an API added later is audited the
moment it is registered: without a request in ``REQUESTS`` the audit fails and asks for one;
with one, it fails unless the new API refuses it or joins ``OPEN`` with a reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kafkalite import Producer
from kafkalite.admin import NewTopic
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    IllegalSaslStateError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from kafkalite.records import RecordBatchBuilder
from kafkalite_server import EmbeddedCluster
from tests.security.authorized import AUTHORIZER, admin_client, client_settings, login

TOPIC, GROUP, TXN = "audit-topic", "audit-group", "audit-tx"
TOPIC_ID = uuid.UUID(int=7)
"""Share APIs name topics by id: every one refuses before it looks the id up."""
AUTHORIZATION_ERRORS = frozenset(error.errno for error in (
    TopicAuthorizationFailedError, GroupAuthorizationFailedError,
    ClusterAuthorizationFailedError, TransactionalIdAuthorizationFailedError))

Body = dict[str, Any]


def _batch(transactional: bool) -> bytes:
    builder = RecordBatchBuilder(producer_id=7 if transactional else -1,
                                 producer_epoch=0 if transactional else -1,
                                 base_sequence=0 if transactional else -1,
                                 is_transactional=transactional)
    builder.append(0, None, b"audit")
    return bytes(builder.build())


def _partitions(field: str = "partition_index", **extra: Any) -> list[Body]:
    return [{field: 0, **extra}]


_FETCH = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
          "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
          "topics": [{"topic": TOPIC, "topic_id": TOPIC_ID, "partitions": _partitions(
              "partition", current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
              partition_max_bytes=1 << 20)}]}
_LIST_OFFSETS = {"isolation_level": 0, "topics": [{"name": TOPIC, "partitions": _partitions(
    current_leader_epoch=-1, timestamp=-1)}]}
_EPOCHS = {"topics": [{"topic": TOPIC, "partitions": _partitions(
    "partition", current_leader_epoch=-1, leader_epoch=0)}]}
_PARTITION_STATE = {"topic_name": TOPIC, "partition_index": 0, "controller_epoch": 2**31 - 1,
                    "leader": 0, "leader_epoch": 99, "isr": [0], "replicas": [0]}
_COMMITTED = [{"name": TOPIC, "partitions": _partitions(
    committed_offset=0, committed_leader_epoch=-1, committed_metadata="")}]
_ACL = {"resource_type": 2, "resource_name": TOPIC, "resource_pattern_type": 3,
        "principal": "User:mallory", "host": "*", "operation": 2, "permission_type": 3}
_ACL_FILTER = {"resource_type_filter": 1, "resource_name_filter": None,
               "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
               "operation": 1, "permission_type": 1}

REQUESTS: dict[ApiKey, list[Body]] = {
    ApiKey.PRODUCE: [
        {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
            {"name": TOPIC, "partition_data": [{"index": 0, "records": _batch(False)}]}]},
        {"transactional_id": TXN, "acks": 1, "timeout_ms": 5000, "topic_data": [
            {"name": TOPIC, "partition_data": [{"index": 0, "records": _batch(True)}]}]}],
    ApiKey.FETCH: [{**_FETCH, "replica_id": -1},  # v15+ names a replica in replica_state
                   {**_FETCH, "replica_id": 1, "replica_state": {"replica_id": 1}}],
    ApiKey.LIST_OFFSETS: [{**_LIST_OFFSETS, "replica_id": -1},
                          {**_LIST_OFFSETS, "replica_id": 1}],
    ApiKey.METADATA: [{"topics": None, "allow_auto_topic_creation": False}],
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: [{"topics": [{"name": TOPIC}]}],
    ApiKey.LEADER_AND_ISR: [{"controller_id": 0, "controller_epoch": 2**31 - 1,
                             "ungrouped_partition_states": [{**_PARTITION_STATE,
                                                             "partition_epoch": 0}],
                             "live_leaders": []}],
    ApiKey.STOP_REPLICA: [{"controller_id": 0, "controller_epoch": 2**31 - 1,
                           "delete_partitions": True,
                           "topics": [{"name": TOPIC, "partition_indexes": [0]}]}],
    ApiKey.UPDATE_METADATA: [{"controller_id": 0, "controller_epoch": 2**31 - 1,
                              "ungrouped_partition_states": [], "live_brokers": []}],
    ApiKey.CONTROLLED_SHUTDOWN: [{"broker_id": 0}],
    ApiKey.OFFSET_COMMIT: [{"group_id": GROUP, "generation_id_or_member_epoch": -1,
                            "member_id": "", "topics": _COMMITTED}],
    ApiKey.OFFSET_FETCH: [{"group_id": GROUP, "topics": None,
                           "groups": [{"group_id": GROUP, "topics": None}]}],
    ApiKey.FIND_COORDINATOR: [{"key_type": 0, "coordinator_keys": [GROUP]},
                              {"key_type": 1, "coordinator_keys": [TXN]}],
    ApiKey.JOIN_GROUP: [{"group_id": GROUP, "session_timeout_ms": 10000,
                         "rebalance_timeout_ms": 10000, "member_id": "",
                         "protocol_type": "consumer",
                         "protocols": [{"name": "range", "metadata": b""}]}],
    ApiKey.HEARTBEAT: [{"group_id": GROUP, "generation_id": 1, "member_id": "m"}],
    ApiKey.LEAVE_GROUP: [{"group_id": GROUP, "members": [{"member_id": "m"}]}],
    ApiKey.SYNC_GROUP: [{"group_id": GROUP, "generation_id": 1, "member_id": "m",
                         "assignments": []}],
    ApiKey.DESCRIBE_GROUPS: [{"groups": [GROUP]}],
    ApiKey.LIST_GROUPS: [{}],
    ApiKey.SASL_HANDSHAKE: [{"mechanism": "PLAIN"}],
    ApiKey.API_VERSIONS: [{"client_software_name": "audit", "client_software_version": "1"}],
    ApiKey.CREATE_TOPICS: [{"topics": [{"name": "audit-new", "num_partitions": 1,
                                        "replication_factor": 1}], "timeout_ms": 5000}],
    ApiKey.DELETE_TOPICS: [{"topic_names": [TOPIC], "timeout_ms": 5000,
                            "topics": [{"name": TOPIC, "topic_id": TOPIC_ID}]}],
    ApiKey.DELETE_RECORDS: [{"topics": [{"name": TOPIC, "partitions": _partitions(offset=-1)}],
                             "timeout_ms": 5000}],
    ApiKey.INIT_PRODUCER_ID: [
        {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1,
         "producer_epoch": -1},
        {"transactional_id": TXN, "transaction_timeout_ms": 60000, "producer_id": -1,
         "producer_epoch": -1}],
    ApiKey.OFFSET_FOR_LEADER_EPOCH: [{**_EPOCHS, "replica_id": -1},
                                     {**_EPOCHS, "replica_id": 1}],
    ApiKey.ADD_PARTITIONS_TO_TXN: [{"v3_and_below_transactional_id": TXN,
                                    "v3_and_below_producer_id": 7,
                                    "v3_and_below_producer_epoch": 0,
                                    "v3_and_below_topics": [{"name": TOPIC,
                                                             "partitions": [0]}]}],
    ApiKey.ADD_OFFSETS_TO_TXN: [{"transactional_id": TXN, "producer_id": 7,
                                 "producer_epoch": 0, "group_id": GROUP}],
    ApiKey.END_TXN: [{"transactional_id": TXN, "producer_id": 7, "producer_epoch": 0,
                      "committed": False}],
    ApiKey.WRITE_TXN_MARKERS: [{"markers": [{
        "producer_id": 7, "producer_epoch": 0, "transaction_result": False,
        "coordinator_epoch": 0, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}]}],
    ApiKey.TXN_OFFSET_COMMIT: [{"transactional_id": TXN, "group_id": GROUP, "producer_id": 7,
                                "producer_epoch": 0, "generation_id": -1, "member_id": "",
                                "topics": _COMMITTED}],
    ApiKey.DESCRIBE_ACLS: [_ACL_FILTER],
    ApiKey.CREATE_ACLS: [{"creations": [_ACL]}],
    ApiKey.DELETE_ACLS: [{"filters": [_ACL_FILTER]}],
    ApiKey.DESCRIBE_CONFIGS: [{"resources": [
        {"resource_type": 2, "resource_name": TOPIC, "configuration_keys": None},
        {"resource_type": 4, "resource_name": "0", "configuration_keys": None}]},
        {"resources": [{"resource_type": 32, "resource_name": GROUP,
                        "configuration_keys": None}]}],
    ApiKey.ALTER_CONFIGS: [{"resources": [
        {"resource_type": 2, "resource_name": TOPIC,
         "configs": [{"name": "retention.ms", "value": "1"}]}]},
        {"resources": [{"resource_type": 32, "resource_name": GROUP,
                        "configs": [{"name": "share.auto.offset.reset", "value": "earliest"}]}]}],
    ApiKey.DESCRIBE_LOG_DIRS: [{"topics": None}],
    ApiKey.SASL_AUTHENTICATE: [{"auth_bytes": b"\0mallory\0mallory-pw"}],
    ApiKey.CREATE_PARTITIONS: [{"topics": [{"name": TOPIC, "count": 2, "assignments": None}],
                                "timeout_ms": 5000}],
    ApiKey.DELETE_GROUPS: [{"groups_names": [GROUP]}],
    ApiKey.ELECT_LEADERS: [{"election_type": 1, "timeout_ms": 5000, "topic_partitions": [
        {"topic": TOPIC, "partitions": [0]}]}],
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: [{"timeout_ms": 5000, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0, "replicas": [0]}]}]}],
    ApiKey.LIST_PARTITION_REASSIGNMENTS: [{"timeout_ms": 5000, "topics": None}],
    ApiKey.INCREMENTAL_ALTER_CONFIGS: [{"resources": [
        {"resource_type": 2, "resource_name": TOPIC,
         "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1"}]}]}],
    ApiKey.OFFSET_DELETE: [{"group_id": GROUP, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0}]}]}],
    ApiKey.DESCRIBE_CLIENT_QUOTAS: [{"components": [], "strict": False}],
    ApiKey.ALTER_CLIENT_QUOTAS: [{"validate_only": False, "entries": [
        {"entity": [{"entity_type": "client-id", "entity_name": "audit-app"}],
         "ops": [{"key": "producer_byte_rate", "value": 1e9, "remove": False}]}]}],
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: [{"users": None}],
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: [{"deletions": [], "upsertions": [
        {"name": "admin", "mechanism": 1, "iterations": 4096, "salt": b"s" * 24,
         "salted_password": b"p" * 32}]}],
    ApiKey.DESCRIBE_CLUSTER: [{"include_cluster_authorized_operations": True,
                               "endpoint_type": 1}],
    ApiKey.DESCRIBE_PRODUCERS: [{"topics": [{"name": TOPIC, "partition_indexes": [0]}]}],
    ApiKey.DESCRIBE_TRANSACTIONS: [{"transactional_ids": [TXN]}],
    ApiKey.LIST_TRANSACTIONS: [{"state_filters": [], "producer_id_filters": []}],
    ApiKey.CONSUMER_GROUP_HEARTBEAT: [{"group_id": GROUP, "member_id": "m", "member_epoch": 0,
                                       "instance_id": None, "rack_id": None,
                                       "rebalance_timeout_ms": 30000,
                                       "subscribed_topic_names": [TOPIC],
                                       "subscribed_topic_regex": None, "server_assignor": None,
                                       "topic_partitions": []}],
    ApiKey.CONSUMER_GROUP_DESCRIBE: [{"group_ids": [GROUP],
                                      "include_authorized_operations": True}],
    ApiKey.SHARE_GROUP_HEARTBEAT: [{"group_id": GROUP, "member_id": "m", "member_epoch": 0,
                                    "rack_id": None, "subscribed_topic_names": [TOPIC]}],
    ApiKey.SHARE_GROUP_DESCRIBE: [{"group_ids": [GROUP], "include_authorized_operations": True}],
    ApiKey.SHARE_FETCH: [{"group_id": GROUP, "member_id": "m", "share_session_epoch": 0,
                          "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                          "max_records": 10, "batch_size": 10, "forgotten_topics_data": [],
                          "topics": [{"topic_id": TOPIC_ID, "partitions": [
                              {"partition_index": 0, "acknowledgement_batches": []}]}]}],
    ApiKey.SHARE_ACKNOWLEDGE: [{"group_id": GROUP, "member_id": "m", "share_session_epoch": 1,
                                "topics": [{"topic_id": TOPIC_ID, "partitions": [
                                    {"partition_index": 0, "acknowledgement_batches": [
                                        {"first_offset": 0, "last_offset": 0,
                                         "acknowledge_types": [1]}]}]}]}],
    **{api_key: [{"group_id": GROUP, "topics": [{"topic_id": TOPIC_ID, "partitions": [
        {"partition": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0,
         "state_batches": []}]}]}]
       for api_key in (ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE,
                       ApiKey.WRITE_SHARE_GROUP_STATE, ApiKey.DELETE_SHARE_GROUP_STATE,
                       ApiKey.READ_SHARE_GROUP_STATE_SUMMARY)},
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: [{"groups": [{"group_id": GROUP, "topics": None}]}],
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: [{"group_id": GROUP, "topics": [
        {"topic_name": TOPIC, "partitions": [{"partition_index": 0, "start_offset": 0}]}]}],
}
"""A minimal valid request per API (several where a check depends on the request: a
consumer's and a replica's Fetch), naming resources that exist."""


@dataclass(frozen=True)
class Open:
    why: str
    shows: Callable[[Body], bool]
    """What the answer to a principal without ACLs may show (and does)."""


OPEN: dict[ApiKey, Open] = {
    ApiKey.API_VERSIONS: Open(
        "clients ask it before they log in; it tells only the versions served",
        lambda answer: answer["error_code"] == 0),
    ApiKey.SASL_HANDSHAKE: Open(
        "the login itself; once logged in, a second login is refused as out of order",
        lambda answer: answer["error_code"] == IllegalSaslStateError.errno),
    ApiKey.SASL_AUTHENTICATE: Open(
        "the login itself; once logged in, a second login is refused as out of order",
        lambda answer: answer["error_code"] == IllegalSaslStateError.errno),
    ApiKey.METADATA: Open(
        "Kafka tells everyone the brokers and the controller; a listing of every topic "
        "leaves out those the principal may not describe",
        lambda answer: answer["topics"] == [] and bool(answer["brokers"])),
    ApiKey.DESCRIBE_CLUSTER: Open(
        "Kafka answers it to every principal: it tells what Metadata tells",
        lambda answer: answer["error_code"] == 0 and answer["cluster_authorized_operations"]
        == 0),
    ApiKey.LIST_GROUPS: Open(
        "lists only the groups the principal may describe (Kafka's rule)",
        lambda answer: answer["error_code"] == 0 and answer["groups"] == []),
    ApiKey.LIST_TRANSACTIONS: Open(
        "lists only the transactional ids the principal may describe (Kafka's rule)",
        lambda answer: answer["error_code"] == 0 and answer["transaction_states"] == []),
}
"""The APIs Kafka leaves open to a principal without ACLs, why, and what they then show."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    """The audited resources exist: a topic with records, a group with a committed offset,
    an open transaction (so that filtered listings have something to leave out)."""
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        with admin_client(cluster) as admin:
            admin.create_topics([NewTopic(TOPIC, 1, 1)])
        # Fetch v13 names the topic by id: the audited topic's own (every Fetch shares it)
        _FETCH["topics"][0]["topic_id"] = cluster.brokers[0].metadata_cache.topic_id(TOPIC)
        admin = login(cluster, "admin")
        for _attempt in range(200):
            if admin.call(ApiKey.FIND_COORDINATOR, 3, {"key": GROUP, "key_type": 0})[
                    "error_code"] == 0:
                break
        assert admin.call(ApiKey.OFFSET_COMMIT, 7, {
            "group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": _COMMITTED})["topics"][0]["partitions"][0]["error_code"] == 0
        producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                            transactional_id=TXN, **client_settings("admin"))
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.send(TOPIC, b"in an open transaction").get(30)
        try:
            yield cluster
        finally:
            producer.abort_transaction(30)
            producer.close()


def authorization_errors(value: Any) -> set[int]:
    """Every authorization error code anywhere in a decoded response."""
    found: set[int] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("error_code") and item in AUTHORIZATION_ERRORS:
                found.add(item)
            else:
                found |= authorization_errors(item)
    elif isinstance(value, list):
        for item in value:
            found |= authorization_errors(item)
    return found


def served(cluster: EmbeddedCluster) -> dict[ApiKey, int]:
    """Each API the broker registers (and so advertises), with the newest version served."""
    return {ApiKey(entry["api_key"]): entry["max_version"]
            for entry in cluster.brokers[0].handlers.advertised()}


def test_every_registered_api_refuses_a_principal_without_acls(
        cluster: EmbeddedCluster) -> None:
    apis = served(cluster)
    assert ApiKey.SASL_AUTHENTICATE in apis and ApiKey.ELECT_LEADERS in apis
    unaudited = sorted(api.name for api in apis if api not in REQUESTS)
    assert not unaudited, f"add a minimal request for {unaudited} to REQUESTS"
    failures = []
    for api_key, version in apis.items():
        for body in REQUESTS[api_key]:
            answer = login(cluster, "mallory").call(api_key, version, body)
            refused = authorization_errors(answer)
            if api_key in OPEN:
                if refused or not OPEN[api_key].shows(answer):
                    failures.append(f"{api_key.name} v{version} (open) answered {answer}")
            elif not refused:
                failures.append(f"{api_key.name} v{version} answered without an "
                                f"authorization error: {answer}")
    assert not failures, "\n".join(failures)


def test_the_open_apis_are_those_declared_open_or_filtering(cluster: EmbeddedCluster) -> None:
    """An API declared open (``@declares(open_because=...)``) must be on the audit's
    allow-list, and the allow-list holds only APIs declared open or filtering."""
    declared = cluster.brokers[0].handlers.access()
    assert set(declared) == set(served(cluster))
    declared_open = {api for api, access in declared.items() if access.open_because}
    may_be_open = declared_open | {api for api, access in declared.items() if access.filters}
    assert declared_open <= set(OPEN) <= may_be_open
    assert all(entry.why for entry in OPEN.values())
