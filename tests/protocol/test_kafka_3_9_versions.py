"""The client API versions of Kafka 3.9, on the wire and with real clients.

One two-broker cluster: a partition led by the second broker lets the first answer
NOT_LEADER_OR_FOLLOWER, with KIP-951's hint naming the leader."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import aiokafka
import confluent_kafka
import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.protocol.broker_version_data import BrokerVersionData
from kafka.structs import OffsetAndMetadata, TopicPartition

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    InvalidProducerIdMappingError,
    MemberIdRequiredError,
    NotLeaderOrFollowerError,
)
from kafkalite.records import encode_batch
from kafkalite_server import EmbeddedCluster
from kafkalite_server.broker import Broker
from tests.conftest import WireClient

KAFKA_3_9_CLIENT_MAXIMA = {
    ApiKey.PRODUCE: 11, ApiKey.FETCH: 17, ApiKey.LIST_OFFSETS: 9, ApiKey.METADATA: 12,
    ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9, ApiKey.FIND_COORDINATOR: 6,
    ApiKey.JOIN_GROUP: 9, ApiKey.HEARTBEAT: 4, ApiKey.LEAVE_GROUP: 5, ApiKey.SYNC_GROUP: 5,
    ApiKey.DESCRIBE_GROUPS: 5, ApiKey.LIST_GROUPS: 5, ApiKey.API_VERSIONS: 4,
    ApiKey.CREATE_TOPICS: 7, ApiKey.DELETE_TOPICS: 6, ApiKey.DELETE_RECORDS: 2,
    ApiKey.INIT_PRODUCER_ID: 5, ApiKey.OFFSET_FOR_LEADER_EPOCH: 4,
    ApiKey.ADD_PARTITIONS_TO_TXN: 3, ApiKey.ADD_OFFSETS_TO_TXN: 4, ApiKey.END_TXN: 4,
    ApiKey.TXN_OFFSET_COMMIT: 4, ApiKey.DESCRIBE_ACLS: 3, ApiKey.CREATE_ACLS: 3,
    ApiKey.DELETE_ACLS: 3, ApiKey.DESCRIBE_CONFIGS: 4, ApiKey.ALTER_CONFIGS: 2,
    ApiKey.DESCRIBE_LOG_DIRS: 4, ApiKey.CREATE_PARTITIONS: 3, ApiKey.DELETE_GROUPS: 2,
    ApiKey.ELECT_LEADERS: 2, ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0, ApiKey.LIST_PARTITION_REASSIGNMENTS: 0,
    ApiKey.OFFSET_DELETE: 0, ApiKey.DESCRIBE_CLIENT_QUOTAS: 1, ApiKey.ALTER_CLIENT_QUOTAS: 1,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0, ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
    ApiKey.DESCRIBE_CLUSTER: 1, ApiKey.DESCRIBE_PRODUCERS: 0,
    ApiKey.DESCRIBE_TRANSACTIONS: 0, ApiKey.LIST_TRANSACTIONS: 1,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: 0,
}
"""Kafka 3.9's newest version of each client API this broker serves, as a 3.9 broker
advertises it (kafka-python's table records a ZooKeeper-mode one; DescribeTopicPartitions
is a KRaft broker's). AddPartitionsToTxn: v3, the newest of the client form; v4+ are
brokers'."""


def _connect(broker: Broker) -> WireClient:
    return WireClient(f"{broker.endpoint.host}:{broker.endpoint.port}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(2, config={"offsets.topic.num.partitions": "1",
                                    "transaction.state.log.num.partitions": "1",
                                    "transaction.state.log.replication.factor": "2",
                                    "transaction.state.log.min.isr": "1",
                                    "group.initial.rebalance.delay.ms": "0"}) as started:
        yield started


@pytest.fixture(scope="module")
def remote_topic(cluster: EmbeddedCluster) -> str:
    """A one-partition topic led by the second broker, known to the first."""
    name = f"remote-{uuid.uuid4().hex[:8]}"
    leader = cluster.brokers[1].node_id
    client = _connect(cluster.brokers[0])
    try:
        created = client.call(ApiKey.CREATE_TOPICS, 7, {"topics": [{
            "name": name, "num_partitions": -1, "replication_factor": -1,
            "assignments": [{"partition_index": 0, "broker_ids": [leader]}], "configs": []}],
            "timeout_ms": 15_000})
        assert created["topics"][0]["error_code"] == 0, created
        for _attempt in range(100):  # bounded: 10 s for the first broker to learn the leader
            topic = client.call(ApiKey.METADATA, 12, {
                "topics": [{"name": name, "topic_id": uuid.UUID(int=0)}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False})["topics"][0]
            if topic["error_code"] == 0 and topic["partitions"][0]["leader_id"] == leader:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"broker 0 never learned the leader of {name}: {topic}")
    finally:
        client.sock.close()
    return name


@pytest.fixture
def first_broker(cluster: EmbeddedCluster) -> Iterator[WireClient]:
    client = _connect(cluster.brokers[0])
    yield client
    client.sock.close()


def _advertised(client: WireClient) -> dict[int, tuple[int, int]]:
    answer = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "test",
                                                  "client_software_version": "1"})
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def test_every_client_api_is_advertised_at_kafka_3_9s_newest_version(
        first_broker: WireClient) -> None:
    advertised = _advertised(first_broker)
    assert {ApiKey(key): advertised[key][1] for key in KAFKA_3_9_CLIENT_MAXIMA} \
        == KAFKA_3_9_CLIENT_MAXIMA
    assert BrokerVersionData(api_versions=advertised).broker_version == (3, 9)


def _leader_hint(cluster: EmbeddedCluster, topic: str) -> tuple[dict[str, int], dict[str, Any]]:
    leader = cluster.brokers[1]
    state = cluster.brokers[0].metadata_cache.partition(topic, 0)
    assert state is not None
    return ({"leader_id": leader.node_id, "leader_epoch": state.leader_epoch},
            {"node_id": leader.node_id, "host": leader.endpoint.host,
             "port": leader.endpoint.port, "rack": None})


def test_produce_v11_to_a_follower_names_the_leader(
        cluster: EmbeddedCluster, remote_topic: str, first_broker: WireClient) -> None:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [{
        "name": remote_topic, "partition_data": [{
            "index": 0, "records": encode_batch([(None, b"x", 1000, None)])}]}]}
    answer = first_broker.call(ApiKey.PRODUCE, 11, body)
    partition = answer["responses"][0]["partition_responses"][0]
    current_leader, endpoint = _leader_hint(cluster, remote_topic)
    assert partition["error_code"] == NotLeaderOrFollowerError.errno
    assert partition["current_leader"] == current_leader
    assert answer["node_endpoints"] == [endpoint]
    old = first_broker.call(ApiKey.PRODUCE, 9, body)["responses"][0]["partition_responses"][0]
    assert old["error_code"] == NotLeaderOrFollowerError.errno
    assert old["current_leader"] == {"leader_id": -1, "leader_epoch": -1}  # not in v9


def _fetch(topic_id: uuid.UUID, version: int) -> dict[str, Any]:
    return {"replica_state": {"replica_id": -1, "replica_epoch": -1}, "max_wait_ms": 0,
            "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "topics": [{"topic_id": topic_id, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20,
                "replica_directory_id": uuid.uuid4()}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def test_fetch_v17_from_a_follower_names_the_leader_and_the_leader_serves_it(
        cluster: EmbeddedCluster, remote_topic: str, first_broker: WireClient) -> None:
    topic_id = cluster.brokers[0].metadata_cache.topic_id(remote_topic)
    answer = first_broker.call(ApiKey.FETCH, 17, _fetch(topic_id, 17))
    partition = answer["responses"][0]["partitions"][0]
    current_leader, endpoint = _leader_hint(cluster, remote_topic)
    assert answer["session_id"] == 0
    assert partition["error_code"] == NotLeaderOrFollowerError.errno
    assert partition["current_leader"] == current_leader
    assert answer["node_endpoints"] == [endpoint]
    leader = _connect(cluster.brokers[1])
    try:
        served = leader.call(ApiKey.FETCH, 17, _fetch(topic_id, 17))
    finally:
        leader.sock.close()
    assert served["responses"][0]["partitions"][0]["error_code"] == 0
    assert served["node_endpoints"] == []


def test_list_offsets_v9_answers_kip_1005_timestamps_as_a_broker_without_tiered_storage(
        cluster: EmbeddedCluster) -> None:
    topic = f"tiers-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1, 1)
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(3):
        producer.produce(topic, f"r{i}".encode(), partition=0)
    assert producer.flush(15) == 0
    leader = next(b for b in cluster.brokers
                  if (state := b.metadata_cache.partition(topic, 0)) is not None
                  and state.leader == b.node_id)
    client = _connect(leader)
    try:
        answer = client.call(ApiKey.LIST_OFFSETS, 9, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": stamp}
                for stamp in (-2, -4, -5, -1)]}]})
    finally:
        client.sock.close()
    earliest, earliest_local, latest_tiered, latest = answer["topics"][0]["partitions"]
    assert [p["error_code"] for p in (earliest, earliest_local, latest_tiered, latest)] \
        == [0, 0, 0, 0]
    assert (earliest_local["offset"], earliest_local["leader_epoch"]) \
        == (earliest["offset"], earliest["leader_epoch"]) == (0, earliest["leader_epoch"])
    assert (latest_tiered["offset"], latest_tiered["timestamp"],
            latest_tiered["leader_epoch"]) == (-1, -1, -1)
    assert latest["offset"] == 3


def test_join_group_v9_and_leave_group_v5_carry_reasons_to_the_log(
        cluster: EmbeddedCluster, caplog: pytest.LogCaptureFixture) -> None:
    group = f"reasons-{uuid.uuid4().hex[:8]}"
    client = WireClient(cluster.bootstrap_servers)
    try:
        coordinator = client.find_coordinator(group)
        client.sock.close()
        client = WireClient(f"{coordinator['host']}:{coordinator['port']}")
        join = {"group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
                "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}], "reason": "first start"}
        with caplog.at_level(logging.INFO, logger="kafkalite_server.handlers.groups"):
            first = client.call(ApiKey.JOIN_GROUP, 9, join)
            assert first["error_code"] == MemberIdRequiredError.errno
            joined = client.call(ApiKey.JOIN_GROUP, 9, {**join, "member_id": first["member_id"]})
            assert joined["error_code"] == 0, joined
            assert joined["leader"] == joined["member_id"] == first["member_id"]
            assert joined["skip_assignment"] is False
            left = client.call(ApiKey.LEAVE_GROUP, 5, {"group_id": group, "members": [{
                "member_id": joined["member_id"], "group_instance_id": None,
                "reason": "shutting down"}]})
        assert left["error_code"] == 0
        assert left["members"][0]["error_code"] == 0
    finally:
        client.sock.close()
    assert "client reason: first start" in caplog.text
    assert "client reason: shutting down" in caplog.text


def test_confluent_kafka_speaks_the_new_versions_end_to_end(cluster: EmbeddedCluster) -> None:
    """librdkafka 2.16 negotiates the highest version it knows of each API: Produce v10
    and Fetch v16 (KIP-951), older ones of the rest."""
    topic, group = f"rd-{uuid.uuid4().hex[:8]}", f"rd-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 2, 2)
    counters, before = _counters(cluster)
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers,
                                         "enable.idempotence": True})
    for i in range(4):
        producer.produce(topic, f"m{i}".encode(), partition=i % 2)
    assert producer.flush(20) == 0
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                                         "group.id": group, "auto.offset.reset": "earliest",
                                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(values) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
    finally:
        consumer.close()
    assert sorted(values) == [b"m0", b"m1", b"m2", b"m3"]
    used = _used(counters, before)
    assert {("Produce", 10), ("FetchConsumer", 16)} <= used  # KIP-951's versions


def test_kafka_python_pinned_to_3_9_speaks_3_9s_versions_end_to_end(
        cluster: EmbeddedCluster) -> None:
    """kafka-python pinned to a release sends that release's version of each API, or its
    own newest when older, without negotiating."""
    topic, group = f"kp-{uuid.uuid4().hex[:8]}", f"kp-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1, 2)
    counters, before = _counters(cluster)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                             api_version=(3, 9, 0), enable_idempotence=True)
    for i in range(2):
        producer.send(topic, f"k{i}".encode()).get(20)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers,
                             api_version=(3, 9, 0), group_id=group,
                             auto_offset_reset="earliest", consumer_timeout_ms=20_000)
    try:
        values: list[bytes] = []
        for record in consumer:  # bounded by consumer_timeout_ms
            values.append(record.value)
            if len(values) == 2:
                break
    finally:
        consumer.close()
    assert sorted(values) == [b"k0", b"k1"]
    # kafka-python 3.0's own newest versions cap the rest (Produce 9, Fetch 12, JoinGroup 7)
    assert {("LeaveGroup", 5), ("FindCoordinator", 6), ("ListOffsets", 9)} \
        <= _used(counters, before)


def test_a_transactional_kafka_python_pinned_to_3_9_commits_and_v4_txn_apis_answer(
        cluster: EmbeddedCluster) -> None:
    """kafka-python pinned to 3.9 commits a transaction (its transaction manager asks for
    the v3 transaction APIs at most, and librdkafka 2.16 for older ones); the versions only
    Kafka 3.9's Java client sends, InitProducerId v5 and EndTxn v4, answer on the wire."""
    topic, group = f"txn-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}"
    transactional_id = f"tx-{topic}"
    cluster.create_topic(topic, 1, 2)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                             api_version=(3, 9, 0), transactional_id=transactional_id)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"t0", partition=0)
        producer.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(
            1, "", -1)}, group)
        producer.commit_transaction()
    finally:
        producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                             isolation_level="read_committed", enable_auto_commit=False)
    try:
        partition = TopicPartition(topic, 0)
        assert consumer.committed(partition) == 1
        assert consumer.end_offsets([partition]) == {partition: 2}  # the record, the marker
    finally:
        consumer.close()
    finder = WireClient(cluster.bootstrap_servers)
    try:
        idempotent = finder.call(ApiKey.INIT_PRODUCER_ID, 5, {
            "transactional_id": None, "transaction_timeout_ms": 60_000})
        assert idempotent["error_code"] == 0 and idempotent["producer_id"] >= 0
        coordinator = finder.find_coordinator(transactional_id, key_type=1)
    finally:
        finder.sock.close()
    client = WireClient(f"{coordinator['host']}:{coordinator['port']}")
    try:
        ended = client.call(ApiKey.END_TXN, 4, {
            "transactional_id": transactional_id, "producer_id": idempotent["producer_id"],
            "producer_epoch": 0, "committed": True})
    finally:
        client.sock.close()
    # another producer's id for this transactional id: Kafka's answer
    assert ended["error_code"] == InvalidProducerIdMappingError.errno


Counts = dict[tuple[str, int], int]


def _counters(cluster: EmbeddedCluster) -> tuple[list[Counts], list[Counts]]:
    """Each broker's live request counts by (name, version), and a copy of them now."""
    counters: list[Counts] = [broker.request_counters.requests for broker in cluster.brokers]
    return counters, [dict(counted) for counted in counters]


def _used(counters: list[Counts], before: list[Counts]) -> set[tuple[str, int]]:
    """Each (request, version) the brokers answered since ``before``. (A long-poll fetch
    of an earlier test's closed consumer may be among them: assert what is there.)"""
    return {key for counted, earlier in zip(counters, before, strict=True)
            for key, count in counted.items() if count > earlier.get(key, 0)}


def test_a_static_leader_rejoining_with_join_group_v9_leads_but_skips_the_assignment(
        cluster: EmbeddedCluster) -> None:
    """KIP-814: the returning leader of a Stable group gets the members and
    ``skip_assignment``; with v8 it is handed the previous leader id and no members, so it
    does not take itself for the leader. Neither rebalances the group."""
    group = f"static-{uuid.uuid4().hex[:8]}"
    finder = WireClient(cluster.bootstrap_servers)
    try:
        coordinator = finder.find_coordinator(group)
    finally:
        finder.sock.close()
    client = WireClient(f"{coordinator['host']}:{coordinator['port']}")
    join = {"group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
            "member_id": "", "group_instance_id": "instance-1", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"m"}], "reason": None}
    try:
        first = client.call(ApiKey.JOIN_GROUP, 9, join)
        assert first["error_code"] == 0 and first["leader"] == first["member_id"], first
        synced = client.call(ApiKey.SYNC_GROUP, 5, {
            "group_id": group, "generation_id": first["generation_id"],
            "member_id": first["member_id"], "group_instance_id": "instance-1",
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": first["member_id"], "assignment": b"a"}]})
        assert synced["error_code"] == 0 and synced["assignment"] == b"a"
        again = client.call(ApiKey.JOIN_GROUP, 9, join)
        assert again["error_code"] == 0 and again["member_id"] != first["member_id"]
        assert (again["leader"], again["skip_assignment"], again["generation_id"]) \
            == (again["member_id"], True, first["generation_id"])
        assert [(m["member_id"], m["group_instance_id"], m["metadata"])
                for m in again["members"]] == [(again["member_id"], "instance-1", b"m")]
        older = client.call(ApiKey.JOIN_GROUP, 8, join)
        assert older["error_code"] == 0 and older["member_id"] != again["member_id"]
        assert (older["leader"], older["members"], older["generation_id"]) \
            == (again["member_id"], [], first["generation_id"])
    finally:
        client.sock.close()


def test_aiokafka_negotiates_each_api_and_reads_what_it_wrote(cluster: EmbeddedCluster) -> None:
    """aiokafka picks min(its newest, the broker's) per API, so the 3.9 maxima only have
    to leave its own versions served."""
    topic, group = f"aio-{uuid.uuid4().hex[:8]}", f"aio-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1, 2)
    counters, before = _counters(cluster)

    async def round_trip() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                             enable_idempotence=True)
        await producer.start()
        try:
            for i in range(2):
                await producer.send_and_wait(topic, f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers,
                                             group_id=group, auto_offset_reset="earliest")
        await consumer.start()
        try:
            return [(await consumer.getone()).value or b"" for _ in range(2)]
        finally:
            await consumer.stop()

    assert sorted(asyncio.run(asyncio.wait_for(round_trip(), 30))) == [b"a0", b"a1"]
    used = {name for name, _version in _used(counters, before)}
    assert {"Produce", "FetchConsumer", "JoinGroup", "SyncGroup", "OffsetFetch"} <= used
