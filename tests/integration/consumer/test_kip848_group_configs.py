"""A consumer group's own timeouts: Kafka 4.0's GROUP configs ``consumer.session.timeout.ms``
and ``consumer.heartbeat.interval.ms``, set through confluent-kafka's (librdkafka's)
IncrementalAlterConfigs as librdkafka's admin test sets them, described as the group's own,
refused outside the broker's ``group.consumer.min/max.*`` bounds with a message naming the
key, and told to the group's members in ConsumerGroupHeartbeat; deleting them brings back
the broker's values."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from kafkalite.protocol import ApiKey  # noqa: E402
from kafkalite_server import EmbeddedCluster  # noqa: E402
from tests.integration.share.helpers import at_coordinator  # noqa: E402

TOPIC = "group-configs-orders"
SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster() as cluster:
        cluster.create_topic(TOPIC, 2)
        yield cluster


def _alter(admin: AdminClient, group: str, op: AlterConfigOpType, **configs: str) -> None:
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value in configs.items()])
    admin.incremental_alter_configs([resource])[resource].result(30)


def _described(admin: AdminClient, group: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.GROUP, group)
    entries: dict[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(30)
    return entries


def _heartbeat_interval(cluster: EmbeddedCluster, group: str) -> int:
    """The interval the coordinator tells a member joining ``group``."""
    client = at_coordinator(cluster.bootstrap_servers, group)
    try:
        answer = client.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
            "group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30_000,
            "subscribed_topic_names": [TOPIC], "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": []})
    finally:
        client.close()
    assert answer["error_code"] == 0, answer
    interval: int = answer["heartbeat_interval_ms"]
    return interval


def test_a_group_sets_its_own_timeouts_within_the_brokers_bounds(
        cluster: EmbeddedCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    group = "group-configs-own"
    _alter(admin, group, AlterConfigOpType.SET, **{SESSION: "50000", HEARTBEAT: "7000"})

    described = _described(admin, group)
    assert (described[SESSION].value, described[HEARTBEAT].value) == ("50000", "7000")
    assert described[SESSION].source == ConfigSource.GROUP_CONFIG.value
    assert _heartbeat_interval(cluster, group) == 7000
    assert _heartbeat_interval(cluster, "group-configs-other") == 5000  # the broker's

    _alter(admin, group, AlterConfigOpType.DELETE, **{HEARTBEAT: ""})
    described = _described(admin, group)
    assert described[HEARTBEAT].value == "5000"
    assert described[HEARTBEAT].source == ConfigSource.DEFAULT_CONFIG.value
    assert described[SESSION].value == "50000"
    assert _heartbeat_interval(cluster, group) == 5000


@pytest.mark.parametrize(("configs", "message"), [
    ({SESSION: "1000"}, r"consumer.session.timeout.ms.*'1000' is not between 45000 and "
                        r"60000 ms \(group.consumer.min.session.timeout.ms"),
    ({HEARTBEAT: "20000"}, r"consumer.heartbeat.interval.ms.*'20000' is not between 5000 "
                           r"and 15000 ms"),
    ({"consumer.rebalance.timeout.ms": "1"}, "not a group config"),
])
def test_a_value_out_of_bounds_is_refused_naming_it(
        cluster: EmbeddedCluster, configs: dict[str, str], message: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    with pytest.raises(KafkaException, match=message) as refused:
        _alter(admin, "group-configs-refused", AlterConfigOpType.SET, **configs)
    assert refused.value.args[0].name() == "INVALID_CONFIG"
    assert _described(admin, "group-configs-refused")[SESSION].value == "45000"  # unchanged
