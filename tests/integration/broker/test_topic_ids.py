"""Topic ids (KIP-516) in the admin APIs: CreateTopics v7 answers the new topic's id (v5+
its partitions, replication factor and configs), Metadata v12 finds it by id, DeleteTopics
v6 deletes by id, and a topic created again under the name has another id; each with
Kafka's authorization (configs need DescribeConfigs, a deletion by id needs Describe)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from kafkalite.admin import ACLOperation, ACLResourcePatternType, ResourceType
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server import EmbeddedCluster
from kafkalite_server.topic_ids import ZERO
from tests.polling import until
from tests.security.authorized import AUTHORIZER, acl, admin_client, login

DENIED = TopicAuthorizationFailedError.errno
DYNAMIC_TOPIC_CONFIG = 1


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    """User:bob may create ``bob-*`` topics and delete ``bob-doomed``, and nothing else:
    neither DescribeConfigs nor Describe on them."""
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        with admin_client(cluster) as admin:
            admin.create_acls([
                acl("User:bob", ACLOperation.CREATE, ResourceType.TOPIC, "bob-",
                    pattern=ACLResourcePatternType.PREFIXED),
                acl("User:bob", ACLOperation.DELETE, ResourceType.TOPIC, "bob-doomed")])
        yield cluster


def _create(client: Any, name: str, *, version: int = 7, validate_only: bool = False,
            configs: dict[str, str] | None = None) -> dict[str, Any]:
    topic = {"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [],
             "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}
    return client.call(ApiKey.CREATE_TOPICS, version, {
        "topics": [topic], "timeout_ms": 10_000, "validate_only": validate_only})["topics"][0]


def _by_id(client: Any, topic_id: Any) -> dict[str, Any]:
    return client.call(ApiKey.METADATA, 12, {
        "topics": [{"name": None, "topic_id": topic_id}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})["topics"][0]


def _delete(client: Any, name: str | None, topic_id: Any = ZERO) -> dict[str, Any]:
    return client.call(ApiKey.DELETE_TOPICS, 6, {
        "topics": [{"name": name, "topic_id": topic_id}], "timeout_ms": 10_000})["responses"][0]


def test_create_answers_the_id_metadata_finds_it_and_delete_by_id_removes_it(cluster):
    admin = login(cluster, "admin")
    created = _create(admin, "by-id", configs={"retention.ms": "60000"})
    topic_id = created["topic_id"]
    assert created["error_code"] == 0 and topic_id != ZERO
    assert (created["num_partitions"], created["replication_factor"]) == (2, 1)
    configs = {c["name"]: c for c in created["configs"]}
    assert configs["retention.ms"]["value"] == "60000"
    assert configs["retention.ms"]["config_source"] == DYNAMIC_TOPIC_CONFIG
    assert configs["cleanup.policy"]["value"] == "delete"
    found = _by_id(admin, topic_id)
    assert (found["error_code"], found["name"], len(found["partitions"])) == (0, "by-id", 2)

    deleted = _delete(admin, None, topic_id)
    assert (deleted["error_code"], deleted["name"], deleted["topic_id"]) == (0, "by-id", topic_id)
    again = _create(admin, "by-id")
    assert again["error_code"] == 0 and again["topic_id"] not in (topic_id, ZERO)
    assert _by_id(admin, topic_id)["error_code"] == UnknownTopicIdError.errno
    assert _delete(admin, None, topic_id)["error_code"] == UnknownTopicIdError.errno
    by_name = _delete(admin, "by-id")
    assert (by_name["error_code"], by_name["topic_id"]) == (0, again["topic_id"])


def test_validate_only_answers_the_settings_and_no_id(cluster):
    admin = login(cluster, "admin")
    dry = _create(admin, "dry-run", validate_only=True)
    assert (dry["error_code"], dry["topic_id"], dry["num_partitions"]) == (0, ZERO, 2)
    assert dry["configs"]
    assert _create(admin, "dry-run", version=4, validate_only=True)["error_code"] == 0


def test_without_describe_configs_the_answer_leaves_the_configs_out(cluster):
    created = _create(login(cluster, "bob"), "bob-topic")
    assert created["error_code"] == 0 and created["topic_id"] != ZERO
    assert created["topic_config_error_code"] == DENIED and created["configs"] is None


def test_without_describe_a_deletion_by_id_is_refused_without_the_name(cluster):
    admin, bob = login(cluster, "admin"), login(cluster, "bob")
    kept = _create(admin, "bob-kept")["topic_id"]
    refused = _delete(bob, None, kept)
    assert (refused["error_code"], refused["name"]) == (DENIED, None)
    assert _by_id(admin, kept)["error_code"] == 0  # still there
    assert _delete(bob, "bob-kept")["error_code"] == DENIED
    doomed = _create(admin, "bob-doomed")["topic_id"]
    assert _delete(bob, None, doomed)["error_code"] == 0  # Delete implies Describe (Kafka)
    assert _delete(admin, "never-was")["error_code"] == UnknownTopicOrPartitionError.errno


def test_kafka_pythons_admin_reads_the_new_id_from_create_topics_v7(cluster):
    admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="admin", sasl_plain_password="admin-pw")
    try:
        [created] = admin.create_topics([NewTopic("peer-made", 1, 1)])["topics"]
        assert created["error_code"] == 0, created
        topic_id = uuid.UUID(str(created["topic_id"]))
        assert topic_id != ZERO
        assert _by_id(login(cluster, "admin"), topic_id)["name"] == "peer-made"
    finally:
        admin.close()


def test_a_topic_created_again_under_its_name_has_another_id_in_metadata(cluster):
    """Through the versions every client already speaks (CreateTopics v4, DeleteTopics v3,
    Metadata v10)."""
    admin = login(cluster, "admin")

    def described() -> dict[str, Any]:
        return admin.call(ApiKey.METADATA, 10, {
            "topics": [{"name": "reborn", "topic_id": ZERO}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})["topics"][0]

    assert _create(admin, "reborn", version=4)["error_code"] == 0
    first = described()["topic_id"]
    assert admin.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": ["reborn"], "timeout_ms": 10_000}
                      )["responses"][0]["error_code"] == 0
    until(lambda: described()["error_code"] == UnknownTopicOrPartitionError.errno,
          "the deletion to reach the broker's metadata")
    assert _create(admin, "reborn", version=4)["error_code"] == 0
    second = until(lambda: described()["topic_id"] if described()["error_code"] == 0 else None,
                   "the topic created again")
    assert ZERO not in (first, second) and second != first


def test_librdkafka_producing_through_a_recreate_with_fewer_partitions_strands_nothing(
        cluster):
    """librdkafka tells a recreated topic by its new id (its test 0107): messages queued
    while the topic was gone, for partitions the new topic lacks, are reported failed; none
    is left undelivered."""
    admin = login(cluster, "admin")
    settings = {"bootstrap.servers": cluster.brokers[0].address("SASL_PLAINTEXT"),
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                "sasl.username": "admin", "sasl.password": "admin-pw",
                "topic.metadata.refresh.interval.ms": "500", "message.timeout.ms": "60000"}
    producer = Producer(settings)
    reports: list[tuple[int, Any]] = []

    def produce(count: int, partitions: int) -> None:
        for index in range(count):
            producer.produce("shrinking", b"m", partition=index % partitions,
                             on_delivery=lambda error, message: reports.append(
                                 (message.partition(), error)))
        producer.poll(0)

    def create(partitions: int) -> None:
        assert admin.call(ApiKey.CREATE_TOPICS, 4, {"topics": [
            {"name": "shrinking", "num_partitions": partitions, "replication_factor": 1,
             "assignments": [], "configs": []}], "timeout_ms": 10_000,
            "validate_only": False})["topics"][0]["error_code"] == 0

    create(4)
    produce(40, 4)
    assert producer.flush(15) == 0 and all(error is None for _p, error in reports)
    assert admin.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": ["shrinking"],
                                                "timeout_ms": 10_000}
                      )["responses"][0]["error_code"] == 0
    produce(40, 4)  # queued while the topic is gone
    create(2)
    # Before topics had ids, librdkafka kept those for partitions 2 and 3 until their
    # message.timeout.ms ran out.
    assert producer.flush(20) == 0, "messages stranded for the old topic's partitions"
    later = reports[40:]
    assert sorted((p, e.code() if e else None) for p, e in later) == sorted(
        [(p, None) for p in (0, 1)] * 10 + [(p, KafkaError._UNKNOWN_PARTITION)
                                           for p in (2, 3)] * 10)


def _fetch(client: Any, version: int, topic: dict[str, Any], **partition: int) -> dict[str, Any]:
    wanted = {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
              "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20,
              **partition}
    return client.call(ApiKey.FETCH, version, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{**topic, "partitions": [wanted]}], "forgotten_topics_data": [],
        "rack_id": ""})["responses"][0]


def test_fetch_v13_names_topics_by_id_and_an_old_id_is_unknown(cluster):
    admin = login(cluster, "admin")
    old = _create(admin, "fetched")["topic_id"]
    _produce_one(cluster, "fetched")
    answer = _fetch(admin, 13, {"topic_id": old})
    assert answer["topic_id"] == old and answer["partitions"][0]["error_code"] == 0
    assert answer["partitions"][0]["high_watermark"] == 1
    assert _delete(admin, "fetched")["error_code"] == 0
    new = _create(admin, "fetched")["topic_id"]
    stale = _fetch(admin, 13, {"topic_id": old})["partitions"][0]
    assert stale["error_code"] == UnknownTopicIdError.errno
    assert _fetch(admin, 13, {"topic_id": new})["partitions"][0]["error_code"] == 0
    denied = _fetch(login(cluster, "bob"), 13, {"topic_id": new})["partitions"][0]
    assert denied["error_code"] == DENIED


def test_fetch_v12_answers_a_diverged_fetcher_its_diverging_epoch(cluster):
    admin = login(cluster, "admin")
    _create(admin, "diverging")
    _produce_one(cluster, "diverging")  # one record, of leader epoch 0: the log ends at 1
    agreeing = _fetch(admin, 12, {"topic": "diverging"}, fetch_offset=1, last_fetched_epoch=0)
    assert agreeing["partitions"][0]["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    ahead = _fetch(admin, 12, {"topic": "diverging"}, fetch_offset=5, last_fetched_epoch=0)
    assert ahead["partitions"][0]["diverging_epoch"] == {"epoch": 0, "end_offset": 1}
    assert ahead["partitions"][0]["error_code"] == 0


def _produce_one(cluster: EmbeddedCluster, topic: str) -> None:
    producer = Producer({"bootstrap.servers": cluster.brokers[0].address("SASL_PLAINTEXT"),
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                         "sasl.username": "admin", "sasl.password": "admin-pw"})
    producer.produce(topic, b"one", partition=0)
    assert producer.flush(15) == 0


def test_librdkafka_and_kafka_python_consumers_read_through_a_recreate(cluster):
    """librdkafka fetches by topic id (Fetch v16, its newest), kafka-python by name with its
    last fetched epoch (v12). After the topic is deleted and created again, librdkafka's old
    id is unknown and it learns the new one; both go on reading the new topic (from their
    position, or from its start if they fetched before it had records) and nothing of the
    old topic comes back."""
    admin = login(cluster, "admin")
    _create(admin, "recreated")
    _produce_one(cluster, "recreated")
    before = _fetched(cluster, 16)
    confluent = Consumer({
        "bootstrap.servers": cluster.brokers[0].address("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
        "sasl.username": "admin", "sasl.password": "admin-pw", "group.id": "through",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": "500"})
    ours = KafkaConsumer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                         security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                         sasl_plain_username="admin", sasl_plain_password="admin-pw",
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         metadata_max_age_ms=500)
    got: dict[str, list[bytes]] = {"librdkafka": [], "kafka-python": []}

    def poll_both() -> bool:
        message = confluent.poll(0.2)
        if message is not None and message.error() is None:
            got["librdkafka"].append(message.value())
        for records in ours.poll(timeout_ms=200).values():
            got["kafka-python"] += [r.value for r in records]
        return all(values and values[-1] in (b"one", b"new-2") for values in got.values())

    try:
        confluent.assign([ConfluentPartition("recreated", 0)])
        ours.assign([TopicPartition("recreated", 0)])
        until(poll_both, "both consumers to read the first topic's record", timeout=30)
        assert got == {"librdkafka": [b"one"], "kafka-python": [b"one"]}
        assert _delete(admin, "recreated")["error_code"] == 0
        _create(admin, "recreated")
        producer = Producer({"bootstrap.servers": cluster.brokers[0].address(
            "SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-pw"})
        for value in (b"new-1", b"new-2"):
            producer.produce("recreated", value, partition=0)
        assert producer.flush(15) == 0
        got = {"librdkafka": [], "kafka-python": []}
        until(poll_both, "both consumers to read the new topic's records", timeout=30)
        for values in got.values():
            assert values in ([b"new-2"], [b"new-1", b"new-2"]), got
        assert _fetched(cluster, 16) > before and _fetched(cluster, 12) > 0
    finally:
        confluent.close()
        ours.close()


def _fetched(cluster: EmbeddedCluster, version: int) -> int:
    """Consumer fetches of ``version`` the broker answered."""
    return cluster.brokers[0].request_counters.requests[("FetchConsumer", version)]
