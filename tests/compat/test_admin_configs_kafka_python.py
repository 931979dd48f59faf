"""kafka-python's KafkaAdminClient against kafkalite-server: topic configs, DescribeConfigs
with synonyms, AlterConfigs and IncrementalAlterConfigs, DeleteRecords, DescribeCluster and
DescribeLogDirs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewTopic
from kafka.structs import TopicPartition

from kafkalite_server import EmbeddedCluster


@pytest.fixture
def admin(cluster: EmbeddedCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def topic_configs(admin: KafkaAdminClient, name: str) -> dict[str, dict]:
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)],
                                       include_synonyms=True, config_filter="all")
    return described["topic"][name]


def test_topic_configs_round_trip_through_kafka_python(admin: KafkaAdminClient) -> None:
    admin.create_topics([NewTopic("kp", 1, 1, topic_configs={
        "compression.type": "gzip", "delete.retention.ms": "100",
        "min.compaction.lag.ms": "5"})])
    configs = topic_configs(admin, "kp")
    assert configs["delete.retention.ms"]["value"] == "100"
    assert configs["delete.retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["delete.retention.ms"]["synonyms"][1] == {
        "name": "log.cleaner.delete.retention.ms", "value": "86400000",
        "source": "DEFAULT_CONFIG"}
    assert configs["delete.retention.ms"]["config_type"] == "LONG"

    assert admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp", configs={
        "retention.ms": (AlterConfigOp.SET, "2000"),
        "compression.type": (AlterConfigOp.DELETE, None)})]) == {"topic": {"kp": "OK"}}
    configs = topic_configs(admin, "kp")
    assert configs["retention.ms"]["value"] == "2000"
    assert configs["compression.type"]["config_source"] == "DEFAULT_CONFIG"
    assert configs["delete.retention.ms"]["value"] == "100"  # incremental: kept

    refused = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp", configs={
        "max.compaction.lag.ms": (AlterConfigOp.SET, "1"),
        "min.compaction.lag.ms": (AlterConfigOp.SET, "10")})])["topic"]["kp"]
    assert "InvalidConfigurationError" in refused and "min.compaction.lag.ms: 10" in refused


def test_delete_records_cluster_and_log_dirs(cluster: EmbeddedCluster,
                                             admin: KafkaAdminClient) -> None:
    admin.create_topics([NewTopic("kp-trim", 1, 1)])
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    for _ in range(5):
        producer.send("kp-trim", b"x", partition=0)
    producer.flush()
    producer.close()
    deleted = admin.delete_records({TopicPartition("kp-trim", 0): 3})
    assert deleted[TopicPartition("kp-trim", 0)]["low_watermark"] == 3
    assert cluster.brokers[0].log_manager.get_log("kp-trim", 0).log_start_offset == 3

    description = admin.describe_cluster()
    assert [b["broker_id"] for b in description["brokers"]] == [0]
    assert description["controller_id"] == 0
    (broker,) = admin.describe_log_dirs()
    (log_dir,) = broker["log_dirs"]
    partitions = {(t["name"], p["partition_index"]): p["partition_size"]
                  for t in log_dir["topics"] for p in t["partitions"]}
    assert partitions[("kp-trim", 0)] > 0


def test_a_broker_resource_stores_a_name_that_is_no_broker_key(
        cluster: EmbeddedCluster, admin: KafkaAdminClient) -> None:
    """Kafka in ZooKeeper mode refuses only known static broker keys; any other name is
    stored under /config/brokers/<id>, listed, and has no effect."""
    broker_id = str(cluster.controller_id)
    broker = ConfigResource(ConfigResourceType.BROKER, broker_id)

    def alter(configs: dict, **how: bool) -> str:
        return admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, broker_id,
                                                   configs=configs)],
                                   raise_on_unknown=False, **how)["broker"][broker_id]

    def stored() -> dict[str, str | None]:
        described = admin.describe_configs([broker])["broker"][broker_id]
        return {name: entry["value"] for name, entry in described.items()
                if entry["config_source"] == "DYNAMIC_BROKER_CONFIG"}

    assert alter({"cleanup.policy": (AlterConfigOp.SET, "compact")}, incremental=True) == "OK"
    assert stored() == {"cleanup.policy": "compact"}
    assert alter({"cleanup.policy": "delete", "retention.ms": "5"}, incremental=False) == "OK"
    assert stored() == {"cleanup.policy": "delete", "retention.ms": "5"}
    admin.create_topics([NewTopic("kp-unaffected", 1, 1)])
    assert topic_configs(admin, "kp-unaffected")["retention.ms"]["value"] == "604800000"

    refused = alter({"log.retention.hours": (AlterConfigOp.SET, "1")})
    assert "InvalidConfigurationError" in refused and "log.retention.hours" in refused
    refused = alter({"log.retention.ms": (AlterConfigOp.SET, "soon")})
    assert "InvalidConfigurationError" in refused and "log.retention.ms" in refused
    assert alter({"cleanup.policy": (AlterConfigOp.DELETE, None),
                  "retention.ms": (AlterConfigOp.DELETE, None)}, incremental=True) == "OK"
    assert stored() == {}
