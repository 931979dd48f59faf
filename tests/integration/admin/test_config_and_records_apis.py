"""Topic configs, config APIs, DeleteRecords and cluster description, driven by
confluent-kafka's AdminClient (librdkafka) against a real broker."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    OffsetSpec,
)
from polling import until

from kafkalite.protocol import ApiKey
from kafkalite.records import iter_batches
from kafkalite_server import EmbeddedCluster
from kafkalite_server.log.checkpoint import OffsetCheckpointFile
from kafkalite_server.log.manager import LOG_START_OFFSET_CHECKPOINT

TIMEOUT = 15


def admin_for(cluster: EmbeddedCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def results(futures: dict[Any, Any]) -> dict[str, Any]:
    """name -> result, or the KafkaError when the future failed."""
    out = {}
    for key, future in futures.items():
        name = getattr(key, "name", key)
        try:
            out[name] = future.result(timeout=TIMEOUT)
        except KafkaException as exc:
            out[name] = exc.args[0]
    return out


def describe(admin: AdminClient, kind: str, name: str) -> dict[str, Any]:
    (future,) = admin.describe_configs([ConfigResource(kind, name)]).values()
    return future.result(timeout=TIMEOUT)


def test_create_topics_accepts_every_kafka_topic_config_and_names_a_bad_one(cluster):
    admin = admin_for(cluster)
    configs = {"compression.type": "gzip", "min.cleanable.dirty.ratio": "0.3",
               "delete.retention.ms": "1000", "max.compaction.lag.ms": "3600000",
               "message.format.version": "2.4", "segment.jitter.ms": "5",
               "unclean.leader.election.enable": "true", "preallocate": "true",
               "message.downconversion.enable": "false",
               "leader.replication.throttled.replicas": "*",
               "message.timestamp.before.max.ms": "1000", "local.retention.ms": "-2"}
    done = results(admin.create_topics([
        NewTopic("all-keys", 1, 1, config=configs),
        NewTopic("bad-ratio", 1, 1, config={"min.cleanable.dirty.ratio": "1.5"}),
        NewTopic("bad-codec", 1, 1, config={"compression.type": "brotli"}),
        NewTopic("tiered", 1, 1, config={"remote.storage.enable": "true"}),
    ]))
    assert done["all-keys"] is None
    for name, key in (("bad-ratio", "min.cleanable.dirty.ratio"),
                      ("bad-codec", "compression.type"), ("tiered", "remote.storage.enable")):
        assert done[name].name() == "INVALID_CONFIG" and key in done[name].str()
    described = describe(admin, "topic", "all-keys")
    for key, value in configs.items():
        assert described[key].value == value and described[key].source == 1
    assert described["retention.ms"].value == "604800000"
    assert described["retention.ms"].is_default


def test_describe_configs_reports_sources_and_synonyms_like_kafka(cluster_factory):
    cluster = cluster_factory(log_retention_ms="3600000")
    admin = admin_for(cluster)
    results(admin.create_topics([NewTopic("syn", 1, 1, config={"segment.bytes": "2048"})]))
    entries = describe(admin, "topic", "syn")  # librdkafka always asks for synonyms
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source) == ("2048", 1)
    assert [(s.name, s.value, s.source) for s in segment.synonyms.values()] == [
        ("segment.bytes", "2048", 1), ("log.segment.bytes", "1073741824", 5)]
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.is_default) == ("3600000", 4, False)
    assert [(s.name, s.source) for s in retention.synonyms.values()] == [
        ("log.retention.ms", 4), ("log.retention.hours", 5)]
    cleaner = entries["min.cleanable.dirty.ratio"]
    assert (cleaner.value, cleaner.source, cleaner.is_default) == ("0.5", 5, True)


def test_a_default_topic_key_lists_no_synonym_ranked_below_its_primary_broker_key(
        cluster_factory):
    """Kafka's configSynonyms starts the list at the primary broker key (log.retention.ms):
    a default retention.ms lists nothing, not log.retention.hours=168 (KafkaJS checks)."""
    admin = admin_for(cluster_factory())
    results(admin.create_topics([NewTopic("plain", 1, 1)]))
    retention = describe(admin, "topic", "plain")["retention.ms"]
    assert (retention.value, retention.source, retention.is_default) == ("604800000", 5, True)
    assert list(retention.synonyms.values()) == []


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_alter_and_incremental_alter_topic_configs_persist_across_a_restart(
        cluster_factory: Callable[..., EmbeddedCluster], tmp_path: Path) -> None:
    cluster = cluster_factory(data_dir=tmp_path)
    admin = admin_for(cluster)
    results(admin.create_topics([NewTopic("conf", 1, 1, config={"retention.ms": "60000"})]))
    altered = results(admin.alter_configs([
        ConfigResource("topic", "conf", set_config={"flush.ms": "12345678",
                                                    "compression.type": "lz4"}),
        ConfigResource("topic", "ghost", set_config={"compression.type": "lz4"}),
        ConfigResource("topic", "conf-bad", set_config={"retention.ms": "soon"}),
    ]))
    assert altered["conf"] is None
    assert altered["ghost"].name() == "UNKNOWN_TOPIC_OR_PART"
    entries = describe(admin, "topic", "conf")
    assert entries["compression.type"].value == "lz4" and entries["flush.ms"].value == "12345678"
    assert entries["retention.ms"].is_default  # AlterConfigs replaces the whole set

    done = results(admin.incremental_alter_configs([ConfigResource("topic", "conf",
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact",
                        incremental_operation=AlterConfigOpType.APPEND),
            ConfigEntry("flush.ms", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry("max.message.bytes", "2000",
                        incremental_operation=AlterConfigOpType.SET)])]))
    assert done["conf"] is None
    bad = results(admin.incremental_alter_configs([
        ConfigResource("topic", "conf", incremental_configs=[
            ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND)]),
        ConfigResource("topic", "conf2", incremental_configs=[
            ConfigEntry("retention.ms", "-7", incremental_operation=AlterConfigOpType.SET)]),
    ]))
    assert bad["conf"].name() == "INVALID_CONFIG" and "retention.ms" in bad["conf"].str()

    cluster.stop()
    restarted = cluster_factory(data_dir=tmp_path)
    entries = describe(admin_for(restarted), "topic", "conf")
    assert entries["cleanup.policy"].value == "delete,compact"
    assert entries["max.message.bytes"].value == "2000"
    assert entries["compression.type"].value == "lz4"
    assert entries["flush.ms"].source == 5


def test_validate_only_changes_nothing(cluster):
    admin = admin_for(cluster)
    results(admin.create_topics([NewTopic("dry", 1, 1)]))
    done = results(admin.incremental_alter_configs(
        [ConfigResource("topic", "dry", incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])],
        validate_only=True))
    assert done["dry"] is None
    assert describe(admin, "topic", "dry")["retention.ms"].is_default


def test_dynamic_broker_configs_change_topic_defaults_and_persist(
        cluster_factory: Callable[..., EmbeddedCluster], tmp_path: Path, wire) -> None:
    cluster = cluster_factory(data_dir=tmp_path)
    admin = admin_for(cluster)
    client = wire(cluster.bootstrap_servers)  # confluent-kafka refuses the name ""
    cluster_wide = client.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
        {"resource_type": 4, "resource_name": "", "configs": [
            {"name": "log.cleanup.policy", "config_operation": 2, "value": "compact"}]}],
        "validate_only": False})
    assert cluster_wide["responses"][0]["error_code"] == 0
    results(admin.create_topics([NewTopic("follows", 1, 1)]))
    done = results(admin.incremental_alter_configs([
        ConfigResource("broker", "0", incremental_configs=[
            ConfigEntry("log.retention.ms", "5000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("sasl.kerberos.min.time.before.relogin", "58000",
                        incremental_operation=AlterConfigOpType.SET)]),
    ]))
    assert done == {"0": None}
    refused = results(admin.incremental_alter_configs([
        ConfigResource("broker", "0", incremental_configs=[
            ConfigEntry("broker.id", "7", incremental_operation=AlterConfigOpType.SET)]),
        ConfigResource("group", "g", incremental_configs=[
            ConfigEntry("consumer.max.poll.records", "50",
                        incremental_operation=AlterConfigOpType.SET)]),
    ]))
    assert refused["0"].name() == "INVALID_CONFIG" and "broker.id" in refused["0"].str()
    # a key that is no group config (Kafka 4.0's are timeouts and share groups' settings)
    assert refused["g"].name() == "INVALID_CONFIG"
    assert "consumer.max.poll.records" in refused["g"].str()

    topic = describe(admin, "topic", "follows")
    assert (topic["retention.ms"].value, topic["retention.ms"].source) == ("5000", 2)
    assert (topic["cleanup.policy"].value, topic["cleanup.policy"].source) == (
        "delete,compact", 3)
    log = cluster.brokers[0].replica_manager.leader_partition("follows", 0).log
    assert log.config.retention_ms == 5000  # honoured by the running log at once

    cluster.stop()
    restarted = cluster_factory(data_dir=tmp_path)
    broker = describe(admin_for(restarted), "broker", "0")
    assert (broker["log.retention.ms"].value, broker["log.retention.ms"].source) == ("5000", 2)
    relogin = broker["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.value, relogin.is_read_only) == ("58000", False)
    assert broker["broker.id"].is_read_only
    described = wire(restarted.bootstrap_servers).call(ApiKey.DESCRIBE_CONFIGS, 3, {
        "resources": [{"resource_type": 4, "resource_name": "", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    assert [(e["name"], e["value"], e["config_source"])
            for e in described["results"][0]["configs"]] == [
        ("log.cleanup.policy", "delete,compact", 3)]


def test_internal_topic_configs_that_would_delete_offsets_are_refused(cluster):
    admin = admin_for(cluster)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"})
    consumer.list_topics("__consumer_offsets", timeout=TIMEOUT)  # auto-creates it

    def led() -> bool:  # created, and its leaders elected (the controller does it next)
        topic = consumer.list_topics("__consumer_offsets", timeout=TIMEOUT).topics
        partitions = topic["__consumer_offsets"].partitions
        return bool(partitions) and all(p.leader >= 0 for p in partitions.values())
    until(led, "__consumer_offsets with its leaders", TIMEOUT)
    consumer.close()
    refused = results(admin.incremental_alter_configs([
        ConfigResource("topic", "__consumer_offsets", incremental_configs=[
            ConfigEntry("cleanup.policy", "delete",
                        incremental_operation=AlterConfigOpType.SET)])]))
    error = refused["__consumer_offsets"]
    assert error.name() == "INVALID_CONFIG" and "internal topic" in error.str()
    assert describe(admin, "topic", "__consumer_offsets")["cleanup.policy"].value == "compact"


def _stored_codecs(cluster: EmbeddedCluster, topic: str) -> list[int]:
    data = b"".join(segment.log_path.read_bytes()
                    for segment in cluster.brokers[0].log_manager.get_log(topic, 0).segments)
    return [batch.compression for batch in iter_batches(data)]


@pytest.mark.parametrize(("topic_codec", "producer_codec", "stored"), [
    ("gzip", "snappy", 1), ("uncompressed", "lz4", 0), ("zstd", "none", 4),
    ("producer", "lz4", 3)])
def test_compression_type_recompresses_on_append(cluster, topic_codec, producer_codec, stored):
    admin = admin_for(cluster)
    results(admin.create_topics([NewTopic("codec", 1, 1,
                                          config={"compression.type": topic_codec})]))
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "compression.type": producer_codec, "linger.ms": 5,
                         "enable.idempotence": True})
    for i in range(50):
        producer.produce("codec", b"value-%d" % i * 20, key=b"k%d" % i, partition=0)
    assert producer.flush(TIMEOUT) == 0
    assert set(_stored_codecs(cluster, "codec")) == {stored}
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "r",
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("codec", 0, 0)])
    seen = []
    deadline = time.monotonic() + TIMEOUT
    while len(seen) < 50 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen.append((message.offset(), message.key(), message.value()))
    consumer.close()
    assert seen == [(i, b"k%d" % i, b"value-%d" % i * 20) for i in range(50)]


def test_delete_records_moves_the_log_start_offset_and_survives_a_restart(
        cluster_factory: Callable[..., EmbeddedCluster], tmp_path: Path) -> None:
    cluster = cluster_factory(data_dir=tmp_path)
    admin = admin_for(cluster)
    results(admin.create_topics([NewTopic("trim", 1, 1)]))
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(10):
        producer.produce("trim", b"v%d" % i, partition=0)
    assert producer.flush(TIMEOUT) == 0
    (deleted,) = admin.delete_records([TopicPartition("trim", 0, 4)]).values()
    assert deleted.result(timeout=TIMEOUT).low_watermark == 4
    (beyond,) = admin.delete_records([TopicPartition("trim", 0, 11)]).values()
    with pytest.raises(KafkaException, match=r"OFFSET_OUT_OF_RANGE|out of range"):
        beyond.result(timeout=TIMEOUT)
    (internal,) = admin.delete_records([TopicPartition("__consumer_offsets", 0, 0)]).values()
    with pytest.raises(KafkaException):
        internal.result(timeout=TIMEOUT)

    def earliest(client: AdminClient) -> int:
        (future,) = client.list_offsets({TopicPartition("trim", 0): OffsetSpec.earliest()}
                                        ).values()
        return future.result(timeout=TIMEOUT).offset

    assert earliest(admin) == 4
    (to_end,) = admin.delete_records([TopicPartition("trim", 0, -1)]).values()
    assert to_end.result(timeout=TIMEOUT).low_watermark == 10
    log_dir = cluster.brokers[0].log_manager.get_log("trim", 0).directory.parent
    checkpoint = OffsetCheckpointFile(log_dir / LOG_START_OFFSET_CHECKPOINT).read()
    assert checkpoint[("trim", 0)] == 10  # written at once, not at the next interval
    cluster.stop()
    restarted = cluster_factory(data_dir=tmp_path)
    assert earliest(admin_for(restarted)) == 10


def test_metadata_and_describe_cluster_report_authorized_operations_when_asked(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    admin = admin_for(cluster)
    results(admin.create_topics([NewTopic("ops", 1, 1)]))
    body = {"topics": [{"name": "ops"}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}
    plain = client.call(ApiKey.METADATA, 8, body)
    assert plain["cluster_authorized_operations"] == -(2**31)
    assert plain["topics"][0]["topic_authorized_operations"] == -(2**31)
    asked = client.call(ApiKey.METADATA, 8, {**body, "include_cluster_authorized_operations": True,
                                             "include_topic_authorized_operations": True})
    # READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
    assert asked["topics"][0]["topic_authorized_operations"] == sum(
        1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))
    # CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
    assert asked["cluster_authorized_operations"] == sum(
        1 << code for code in (5, 7, 8, 9, 10, 11, 12))
    description = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    assert description.cluster_id == plain["cluster_id"]
    assert [node.id for node in description.nodes] == [0]
    assert {op.name for op in description.authorized_operations} == {
        "CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE"}


def test_describe_log_dirs_lists_partition_sizes(cluster, wire):
    admin = admin_for(cluster)
    results(admin.create_topics([NewTopic("sized", 2, 1)]))
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce("sized", b"x" * 1000, partition=1)
    assert producer.flush(TIMEOUT) == 0
    client = wire(cluster.bootstrap_servers)
    answer = client.call(ApiKey.DESCRIBE_LOG_DIRS, 4,
                         {"topics": [{"topic": "sized", "partitions": [0, 1]}]})
    (result,) = answer["results"]
    assert result["error_code"] == 0 and result["total_bytes"] > 0
    (topic,) = result["topics"]
    sizes = {p["partition_index"]: p["partition_size"] for p in topic["partitions"]}
    assert sizes[0] == 0 and sizes[1] > 1000
