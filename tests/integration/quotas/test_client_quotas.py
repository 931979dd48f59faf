"""Client quotas on a two-broker cluster with an authorizer: set and described through the
AdminClient, kept in Kafka's ZooKeeper nodes, followed by every broker, refused to a
principal without the Cluster's config permissions, and enforced on librdkafka clients
(throttle_cb fires, the rate keeps to the quota, another client id runs free)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from polling import until

from kafkalite.admin import (
    AdminClient,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    NewTopic,
    OffsetSpec,
    TopicPartition,
    UserScramCredentialUpsertion,
)
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import ClusterAuthorizationFailedError, InvalidRequestError
from kafkalite_server import EmbeddedCluster
from kafkalite_server.quotas.client_quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    Name,
    QuotaEntity,
)
from tests.security.authorized import AUTHORIZER, USERS, admin_client, login

MB = 1024 * 1024
TOPIC = "quota-t"
MESSAGE = b"q" * (64 * 1024)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=2, config=AUTHORIZER) as running:
        with admin_client(running) as admin:
            admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [0]})],
                                wait_for_metadata=True)
        yield running


@pytest.fixture(scope="module")
def admin(cluster: EmbeddedCluster) -> Iterator[AdminClient]:
    with admin_client(cluster) as client:
        yield client


def librdkafka(cluster: EmbeddedCluster, client_id: str, events: list[Any],
               **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": cluster.brokers[0].address("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
            "sasl.username": "admin", "sasl.password": USERS["admin"],
            "client.id": client_id, "throttle_cb": events.append, **extra}


def entity(**names: str | None) -> ClientQuotaEntity:
    return ClientQuotaEntity({kind.replace("_", "-"): name for kind, name in names.items()})


def test_quotas_are_set_described_and_kept_in_kafkas_nodes(cluster: EmbeddedCluster,
                                                           admin: AdminClient) -> None:
    assert admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "pw")]) == {"alice": None}
    alice, alice_app, default_client = (entity(user="alice"),
                                        entity(user="alice", client_id="app"),
                                        entity(client_id=None))
    assert admin.alter_client_quotas([
        ClientQuotaAlteration(alice, {PRODUCER_BYTE_RATE: 2 * MB, "request_percentage": 50}),
        ClientQuotaAlteration(alice_app, {CONSUMER_BYTE_RATE: 4096}),
        ClientQuotaAlteration(default_client, {PRODUCER_BYTE_RATE: 10 * MB})]) == {
        alice: None, alice_app: None, default_client: None}
    assert admin.describe_client_quotas() == {
        alice: {PRODUCER_BYTE_RATE: 2.0 * MB, "request_percentage": 50.0},
        alice_app: {CONSUMER_BYTE_RATE: 4096.0},
        default_client: {PRODUCER_BYTE_RATE: 10.0 * MB}}
    assert admin.describe_client_quotas(
        [ClientQuotaFilterComponent.of_entity("user", "alice")], strict=True) == {
        alice: {PRODUCER_BYTE_RATE: 2.0 * MB, "request_percentage": 50.0}}
    assert list(admin.describe_client_quotas(
        [ClientQuotaFilterComponent.of_default_entity("client-id")])) == [default_client]

    store = cluster.brokers[0].membership.require_store()
    user_node = json.loads(store.get("/config/users/alice")[0])["config"]
    assert user_node[PRODUCER_BYTE_RATE] == str(2 * MB)
    assert user_node["request_percentage"] == "50.0"
    assert user_node["SCRAM-SHA-256"].startswith("salt=")  # the credential stays
    assert json.loads(store.get("/config/users/alice/clients/app")[0])["config"] == {
        CONSUMER_BYTE_RATE: "4096"}
    assert json.loads(store.get("/config/clients/<default>")[0])["config"] == {
        PRODUCER_BYTE_RATE: str(10 * MB)}
    notices = [json.loads(store.get(f"/config/changes/{name}")[0])["entity_path"]
               for name in store.children("/config/changes")]
    assert {"users/alice", "users/alice/clients/app", "clients/<default>"} <= set(notices)
    assert cluster.brokers[0].security.scram_credential("alice", "SCRAM-SHA-256") is not None

    # The other broker follows the change notifications.
    other = cluster.brokers[1].client_quotas
    until(lambda: other.quotas.get(QuotaEntity(client_id=Name(None))) is not None,
          timeout=10, what="broker 1 reads the new quotas")

    # validate_only changes nothing; a value of None removes the key.
    assert admin.alter_client_quotas([ClientQuotaAlteration(alice, {PRODUCER_BYTE_RATE: 1})],
                                     validate_only=True) == {alice: None}
    assert admin.describe_client_quotas()[alice][PRODUCER_BYTE_RATE] == 2.0 * MB
    removals = [ClientQuotaAlteration(e, dict.fromkeys(quotas))
                for e, quotas in admin.describe_client_quotas().items()]
    assert set(admin.alter_client_quotas(removals).values()) == {None}
    assert admin.describe_client_quotas() == {}


def test_bad_alterations_get_kafkas_errors(admin: AdminClient) -> None:
    alice = entity(user="alice")
    cases = {
        "negative": (alice, {PRODUCER_BYTE_RATE: -1}, "must be positive"),
        "unknown key": (entity(client_id="c1"), {"producer_rate": 5},
                        "Invalid configuration key producer_rate"),
        "fraction": (entity(client_id="c2"), {CONSUMER_BYTE_RATE: 1.5}, "must be a Long"),
        "ip entity": (entity(ip="10.0.0.1"), {PRODUCER_BYTE_RATE: 5}, "entity type: ip"),
    }
    results = admin.alter_client_quotas([ClientQuotaAlteration(e, ops)
                                         for e, ops, _ in cases.values()])
    for name, (quota_entity, _ops, message) in cases.items():
        error = results[quota_entity]
        assert isinstance(error, InvalidRequestError), name
        assert message in str(error), (name, str(error))
    assert admin.describe_client_quotas() == {}


def test_a_principal_without_the_clusters_config_permissions_is_refused(
        cluster: EmbeddedCluster) -> None:
    with admin_client(cluster, "mallory") as mallory:
        with pytest.raises(ClusterAuthorizationFailedError):
            mallory.describe_client_quotas()
        target = entity(client_id="mallory-app")
        result = mallory.alter_client_quotas([ClientQuotaAlteration(
            target, {PRODUCER_BYTE_RATE: 10**9})])
        assert isinstance(result[target], ClusterAuthorizationFailedError)


def produce(cluster: EmbeddedCluster, client_id: str, total: int,
            topic: str = TOPIC) -> tuple[list[Any], float]:
    """Sends ``total`` bytes; the throttle events seen and the seconds it took."""
    events: list[Any] = []
    producer = Producer(librdkafka(cluster, client_id, events, **{"linger.ms": 5}))
    started = time.monotonic()
    for _ in range(total // len(MESSAGE)):
        while True:
            try:
                producer.produce(topic, MESSAGE)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0
    return events, time.monotonic() - started


def test_a_producer_over_its_quota_is_throttled_and_another_client_is_not(
        cluster: EmbeddedCluster, admin: AdminClient) -> None:
    limited = entity(client_id="throttled-producer")
    assert admin.alter_client_quotas([ClientQuotaAlteration(
        limited, {PRODUCER_BYTE_RATE: MB})]) == {limited: None}
    broker = cluster.brokers[0]
    until(lambda: broker.client_quotas.quotas, timeout=10, what="the quota is read")
    events, elapsed = produce(cluster, "throttled-producer", 4 * MB)
    # librdkafka reports each non-zero throttle time and the drop back to zero
    assert any(e.throttle_time > 0 for e in events)
    assert all(e.broker_id == 0 for e in events)
    # About one window's worth and one request go through at once; the rest waits.
    assert elapsed >= 2.0
    rate = broker.client_throttles.rate(PRODUCER_BYTE_RATE, "admin", "throttled-producer")
    assert 0 < rate <= 2 * MB
    free_events, _ = produce(cluster, "free-producer", 4 * MB)
    assert free_events == []
    assert broker.client_throttles.rate(PRODUCER_BYTE_RATE, "admin", "free-producer") == 0


def test_a_consumer_over_its_quota_is_throttled(cluster: EmbeddedCluster,
                                                admin: AdminClient) -> None:
    limited = entity(user="admin", client_id="throttled-consumer")
    assert admin.alter_client_quotas([ClientQuotaAlteration(
        limited, {CONSUMER_BYTE_RATE: 2 * MB})]) == {limited: None}
    broker = cluster.brokers[0]
    until(lambda: QuotaEntity(Name("admin"), Name("throttled-consumer"))
          in broker.client_quotas.quotas, timeout=10, what="the quota is read")
    admin.create_topics([NewTopic("quota-c", replica_assignments={0: [0]})],
                        wait_for_metadata=True)
    produce(cluster, "consumer-feeder", 6 * MB, "quota-c")
    partition = TopicPartition("quota-c", 0)
    end = admin.list_partition_offsets({partition: OffsetSpec.LATEST})[partition].offset
    assert end * len(MESSAGE) == 6 * MB
    events: list[Any] = []
    consumer = Consumer(librdkafka(cluster, "throttled-consumer", events, **{
        "group.id": "quota-g", "enable.auto.commit": False}))
    consumer.assign([KafkaTopicPartition("quota-c", 0, OFFSET_BEGINNING)])
    started, received = time.monotonic(), 0
    deadline = started + 60
    while received < end and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            received += 1
    elapsed = time.monotonic() - started
    consumer.close()
    assert received == end
    # librdkafka also reports the end of a throttle, with a time of 0
    assert any(e.throttle_time > 0 for e in events)
    assert elapsed >= (end * len(MESSAGE) - 2 * 2 * MB) / (2 * MB)
    rate = broker.client_throttles.rate(CONSUMER_BYTE_RATE, "admin", "throttled-consumer")
    assert 0 < rate <= 3 * MB


def test_request_percentage_throttles_a_busy_user_and_not_another(
        cluster: EmbeddedCluster, admin: AdminClient) -> None:
    busy = entity(user="bob")
    assert admin.alter_client_quotas([ClientQuotaAlteration(
        busy, {"request_percentage": 0.0001})]) == {busy: None}
    broker = cluster.brokers[0]
    until(lambda: QuotaEntity(Name("bob")) in broker.client_quotas.quotas, timeout=10,
          what="the quota is read")
    metadata = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}
    bob, alice = login(cluster, "bob"), login(cluster, "alice")
    try:
        # Any time at all a handler runs is well over 0.0001% of a second.
        assert bob.call(ApiKey.METADATA, 9, metadata)["throttle_time_ms"] > 0
        assert alice.call(ApiKey.METADATA, 9, metadata)["throttle_time_ms"] == 0
    finally:
        bob.sock.close()
        alice.sock.close()
        admin.alter_client_quotas([ClientQuotaAlteration(busy, {"request_percentage": None})])


def test_a_user_with_only_a_client_quota_can_be_given_a_credential(
        cluster: EmbeddedCluster, admin: AdminClient) -> None:
    """A quota of ``users/<u>/clients/<c>`` leaves ``/config/users/<u>`` as an empty parent
    node; the user's first SCRAM credential is written into it, not refused."""
    bob_app = entity(user="bob", client_id="app")
    assert admin.alter_client_quotas([ClientQuotaAlteration(bob_app, {CONSUMER_BYTE_RATE: 1024})]
                                     ) == {bob_app: None}
    assert admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("bob", "SCRAM-SHA-512", "pw")]) == {"bob": None}
    assert admin.describe_user_scram_credentials(["bob"])["bob"]["error"] is None
    assert admin.describe_client_quotas()[bob_app] == {CONSUMER_BYTE_RATE: 1024.0}
