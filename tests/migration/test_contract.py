"""The migration contract's pieces, one by one: kafka-python's config keys, error names,
security refusals, socket settings, idle connections, metadata backoff, admin methods."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import kafka
import kafka.errors
import pytest

import kafkalite.errors
from kafkalite.admin import AdminClient, KafkaAdminClient, NewTopic, OffsetSpec
from kafkalite.client.client import KafkaClient
from kafkalite.consumer import Consumer, KafkaConsumer
from kafkalite.consumer.config import validate_consumer_config
from kafkalite.errors import ConfigError, NoError, UnsupportedFeatureError
from kafkalite.producer import KafkaProducer, Producer
from kafkalite.producer.config import validate_producer_config
from kafkalite.protocol.errors import UnsupportedVersionError
from kafkalite.structs import OffsetAndMetadata, TopicPartition
from kafkalite_server import EmbeddedCluster

_OBJECT_VALUED = {"partitioner", "partition_assignment_strategy", "kafka_client", "selector",
                  "default_offset_commit_callback", "bootstrap_servers"}
"""Keys whose kafka-python defaults are kafka-python objects (checked by name only)."""


def _their_defaults(cls: type) -> dict[str, Any]:
    return {k: v for k, v in cls.DEFAULT_CONFIG.items() if k not in _OBJECT_VALUED}


def test_kafka_python_names_are_our_classes() -> None:
    assert KafkaProducer is Producer and KafkaConsumer is Consumer
    assert KafkaAdminClient is AdminClient


def test_every_kafka_python_producer_key_with_its_default_is_accepted() -> None:
    config = validate_producer_config(_their_defaults(kafka.KafkaProducer))
    assert config["retries"] == 2147483647  # float('inf') means "retry until the timeout"


def test_every_kafka_python_consumer_key_with_its_default_is_accepted() -> None:
    config = _their_defaults(kafka.KafkaConsumer)
    config.pop("consumer_timeout_ms")  # a Consumer argument, not a config key
    validate_consumer_config(config)


def test_every_kafka_python_admin_key_is_a_client_key() -> None:
    KafkaClient(**_their_defaults(kafka.KafkaAdminClient)).close()


def test_unknown_keys_stay_errors() -> None:
    with pytest.raises(ConfigError, match="linger_msec"):
        validate_producer_config({"linger_msec": 5})


@pytest.mark.parametrize("settings, key", [
    ({"proxy_url": "http://proxy:3128"}, "proxy_url"),
    ({"socks5_proxy": "socks5://proxy:1080"}, "socks5_proxy"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "sasl_mechanism")])
def test_settings_kafkalite_cannot_honour_are_refused_naming_the_key(
        settings: dict[str, str], key: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=key):
        validate_producer_config(settings)


@pytest.mark.parametrize("settings, key", [
    ({"security_protocol": "SASL_PLAINTEXT"}, "sasl_mechanism"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"}, "sasl_plain_username"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
     "sasl_oauth_token_provider"),
    ({"security_protocol": "TLS"}, "security_protocol")])
def test_incomplete_security_settings_are_config_errors_naming_the_key(
        settings: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        validate_producer_config(settings)


def test_transactional_id_is_accepted_and_checked_naming_the_key() -> None:
    assert validate_producer_config({"transactional_id": "tx-1"})["transactional_id"] == "tx-1"
    with pytest.raises(ConfigError, match="transactional_id"):
        validate_producer_config({"transactional_id": "tx-1", "acks": 1})
    with pytest.raises(ConfigError, match="transactional_id"):
        validate_producer_config({"transactional_id": ""})


CLIENT_SIDE_NAMES = {"CorruptRecordError"}
"""kafka-python names a broker code after what kafkalite raises on the client side (a record
failing its CRC while reading); the broker's code 2 is ``CorruptMessageError`` /
``CorruptRecordException``."""


def test_every_kafka_python_error_name_exists_and_aliases_keep_the_code() -> None:
    for name, theirs in vars(kafka.errors).items():
        if not (isinstance(theirs, type) and issubclass(theirs, Exception)):
            continue
        ours = getattr(kafkalite.errors, name)
        assert issubclass(ours, kafkalite.errors.KafkaError), name
        code = getattr(theirs, "errno", None)
        if name not in CLIENT_SIDE_NAMES and isinstance(code, int) and code > 0 and issubclass(
                theirs, kafka.errors.BrokerResponseError):
            assert ours.errno == code, name
    assert kafkalite.errors.NotLeaderForPartitionError is kafkalite.errors.NotLeaderOrFollowerError
    assert kafkalite.errors.for_code(0) is NoError


def test_metadata_backoff_doubles_up_to_retry_backoff_max_ms() -> None:
    client = KafkaClient(bootstrap_servers="127.0.0.1:1", retry_backoff_ms=100,
                         retry_backoff_max_ms=350)
    refresher = client.metadata
    seen = []
    for _ in range(4):
        seen.append(refresher.retry_backoff)
        refresher._on_failure(0, OSError("down"))
    assert seen == [0.1, 0.2, 0.35, 0.35]
    refresher._on_response({"brokers": [], "topics": []})
    assert refresher.retry_backoff == 0.1
    client.close()


@pytest.fixture
def broker(cluster: EmbeddedCluster) -> str:
    return cluster.bootstrap_servers


def _ready_connections(client: KafkaClient) -> list[Any]:
    return [c for c in list(client._connections.values()) if c.is_ready()]


def test_socket_buffers_and_options_reach_the_socket(broker: str) -> None:
    with Producer(bootstrap_servers=broker, send_buffer_bytes=262144,
                  receive_buffer_bytes=131072,
                  socket_options=[(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]) as producer:
        producer.send("buffers", b"x").get(timeout=10)
        (conn, *_) = _ready_connections(producer._client)
        sock = conn._sock
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 262144
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 131072


def test_idle_connections_close_and_the_next_request_reconnects(broker: str) -> None:
    with Producer(bootstrap_servers=broker, connections_max_idle_ms=300,
                  metadata_max_age_ms=600000) as producer:
        producer.send("idle", b"1").get(timeout=10)
        deadline = time.monotonic() + 10
        while _ready_connections(producer._client) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _ready_connections(producer._client)
        assert producer.send("idle", b"2").get(timeout=10).offset == 1


def test_metrics_have_kafka_pythons_shape_and_can_be_off(broker: str) -> None:
    with Producer(bootstrap_servers=broker) as producer:
        for _ in range(5):
            producer.send("measured", b"x")
        producer.flush()
        group = producer.metrics()["producer-metrics"]
        assert group["record-send-total"] == 5 and group["record-send-rate"] > 0
    with Producer(bootstrap_servers=broker, metrics_enabled=False) as producer:
        assert producer.metrics() == {}


@pytest.fixture
def admin(broker: str) -> Iterator[AdminClient]:
    with AdminClient(broker, request_timeout_ms=10000) as client:
        yield client


def test_admin_group_offsets_cluster_and_unsent_apis(broker: str, admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ledger", 2, 1)], wait_for_metadata=True)
    with Producer(bootstrap_servers=broker) as producer:
        for i in range(6):
            producer.send("ledger", b"%d" % i, partition=i % 2)
    tp0, tp1 = TopicPartition("ledger", 0), TopicPartition("ledger", 1)

    assert admin.alter_group_offsets("auditors", {tp0: 1, tp1: OffsetAndMetadata(2, None)}) \
        == {tp0: NoError, tp1: NoError}
    offsets = admin.list_group_offsets(["auditors"])["auditors"]
    assert {tp: m.offset for tp, m in offsets.items()} == {tp0: 1, tp1: 2}
    reset = admin.reset_group_offsets("auditors", {tp0: OffsetSpec.LATEST,
                                                   tp1: OffsetSpec.EARLIEST})
    assert {tp: r["offset"] for tp, r in reset.items()} == {tp0: 3, tp1: 0}
    ends = admin.list_partition_offsets({tp0: OffsetSpec.LATEST, tp1: OffsetSpec.LATEST})
    assert {tp: r.offset for tp, r in ends.items()} == {tp0: 3, tp1: 3}

    cluster = admin.describe_cluster()
    assert [b["broker_id"] for b in cluster["brokers"]] == [0]
    assert admin.api_versions()[3][1] >= 1  # Metadata

    assert admin.delete_groups(["auditors"]) == {"auditors": "OK"}  # kafka-python 3's shape
    assert admin.list_group_offsets(["auditors"]) == {"auditors": {}}
    assert admin.list_partition_reassignments() == {}  # nothing is moving
    first = admin.describe_topic_partitions(["ledger"], response_partition_limit=1)
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in first["topics"]] == [("ledger", [0])]
    assert first["next_cursor"] == {"topic_name": "ledger", "partition_index": 1}
    rest = admin.describe_topic_partitions(["ledger"], cursor=first["next_cursor"])
    assert [p["partition_index"] for p in rest["topics"][0]["partitions"]] == [1]
    assert rest["next_cursor"] is None
    assert rest["topics"][0]["partitions"][0]["eligible_leader_replicas"] is None
    with pytest.raises(UnsupportedVersionError, match="DescribeQuorum"):
        admin.describe_metadata_quorum()
