"""kafka-python with ``api_version`` pinned, as its docs show.

kafka-python names the broker's release from the newest versions of a few APIs it
advertises. When its user pins a release at or below that one, it speaks the pinned
release's version of every API from its own table instead of negotiating each, so the
broker must serve every client API of every release up to the one it appears to be.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS, BrokerVersionData
from kafka.structs import OffsetAndMetadata, TopicPartition

from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster
from tests.conftest import WireClient

NOT_CLIENT_APIS = {
    4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata", 7: "ControlledShutdown",
    56: "AlterPartition", 57: "UpdateFeatures", 58: "Envelope", 67: "AllocateProducerIds",
}
"""Broker-to-broker APIs: kafka-python never sends them."""
NOT_SERVED = {
    34: "AlterReplicaLogDirs (moving replicas between a broker's log directories)",
    38: "CreateDelegationToken", 39: "RenewDelegationToken", 40: "ExpireDelegationToken",
    41: "DescribeDelegationToken",
}
"""Client APIs kafkalite does not serve at all (docs/compatibility.md lists them): a pinned
kafka-python calling one gets IncompatibleBrokerVersion or an error, as from a broker
without the feature."""
CLIENT_MAX = {24: 3}
"""AddPartitionsToTxn v4+ are KIP-890's broker-to-broker versions, which Kafka's table lists
and this broker serves but does not advertise: kafka-python's transaction manager asks for
v3 at most."""
SASL_LISTENERS_ONLY = {17: "SaslHandshake", 36: "SaslAuthenticate"}
"""Advertised on SASL listeners only (this broker's is PLAINTEXT), where kafka-python sends
them; tests/security runs kafka-python over SASL."""
PINNED = [(2, 5, 0), (2, 8, 0), (3, 0, 0), (3, 1, 0), (3, 9, 0)]


@pytest.fixture(scope="module")
def advertised() -> Iterator[dict[int, tuple[int, int]]]:
    with EmbeddedCluster(1) as cluster:
        client = WireClient(cluster.bootstrap_servers)
        try:
            answer = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "pinned",
                                                         "client_software_version": "1"})
        finally:
            client.sock.close()
    yield {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def test_every_client_api_of_each_release_kafka_python_may_assume_is_served(
        advertised: dict[int, tuple[int, int]]) -> None:
    seen_as = BrokerVersionData(api_versions=advertised).broker_version
    short = {}
    for release, table in BROKER_API_VERSIONS.items():
        if release > seen_as:
            continue
        for key, (_, newest) in table.items():
            if key in NOT_CLIENT_APIS or key in NOT_SERVED or key in SASL_LISTENERS_ONLY:
                continue
            served = advertised.get(key)
            newest = min(newest, CLIENT_MAX.get(key, newest))
            if served is None or served[1] < newest:
                short[(release, key)] = (newest, served)
    assert short == {}, f"kafka-python takes the broker for Kafka {seen_as}; short: {short}"


@pytest.mark.parametrize("pinned", PINNED, ids=lambda v: ".".join(map(str, v)))
def test_a_pinned_client_produces_consumes_in_a_group_and_administers(
        cluster: EmbeddedCluster, pinned: tuple[int, int, int]) -> None:
    bootstrap = cluster.bootstrap_servers
    topic, group = f"pinned-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=pinned)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        admin.create_partitions({topic: NewPartitions(total_count=2)})
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                         config_filter="all")
        assert "retention.ms" in repr(configs)
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=pinned, acks="all")
    for i in range(4):
        producer.send(topic, f"v{i}".encode(), partition=i % 2).get(20)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, api_version=pinned,
                             group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=20_000)
    try:
        values = []
        for record in consumer:  # bounded by consumer_timeout_ms
            values.append(record.value)
            if len(values) == 4:
                break
        assert sorted(values) == [b"v0", b"v1", b"v2", b"v3"]
        partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        consumer.commit({tp: OffsetAndMetadata(2, "", -1) for tp in partitions})
        assert [consumer.committed(tp) for tp in partitions] == [2, 2]
        assert consumer.end_offsets(partitions) == dict.fromkeys(partitions, 2)
        assert consumer.beginning_offsets(partitions) == dict.fromkeys(partitions, 0)
    finally:
        consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=pinned)
    try:
        assert group in repr(admin.list_groups())
        assert group in repr(admin.describe_groups([group]))
        admin.delete_groups([group])
    finally:
        admin.close()
