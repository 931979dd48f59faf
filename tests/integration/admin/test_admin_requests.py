"""The AdminClient methods that send AlterConfigs, IncrementalAlterConfigs, DeleteRecords,
DescribeLogDirs, DescribeCluster, DeleteGroups, OffsetDelete and LeaveGroup v3, against an
EmbeddedCluster; each result is compared with kafka-python's KafkaAdminClient asking the
same broker the same question, since kafkalite's admin is a drop-in for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kafka
import kafka.admin
import kafka.errors
import pytest

from kafkalite import AdminClient, Consumer, NewTopic
from kafkalite.admin import AlterConfigOp, ConfigResource, MemberToRemove
from kafkalite.errors import (
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NoError,
    OffsetOutOfRangeError,
    UnknownMemberIdError,
)
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster
from tests.integration.consumer.helpers import poll_until, produce

pytestmark = pytest.mark.compat


@pytest.fixture
def admin(cluster: EmbeddedCluster) -> Iterator[AdminClient]:
    with AdminClient(cluster.bootstrap_servers, request_timeout_ms=10000) as client:
        yield client


@pytest.fixture
def theirs(cluster: EmbeddedCluster) -> Iterator[kafka.KafkaAdminClient]:
    client = kafka.KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def topic_settings(admin: AdminClient, topic: str) -> dict[str, str | None]:
    resource = ConfigResource("topic", topic)
    return admin.describe_configs([resource], config_filter="modified")[resource]


def kafka_python_settings(theirs: kafka.KafkaAdminClient, topic: str) -> dict[str, Any]:
    described = theirs.describe_configs([kafka.admin.ConfigResource("TOPIC", topic)])
    return {k: v["value"] for k, v in described["topic"][topic].items()}


def same_changes(configs: dict[str, Any]) -> tuple[ConfigResource, kafka.admin.ConfigResource]:
    """The same change as each library spells it, on topics named ``ours`` and ``theirs``."""
    return (ConfigResource("TOPIC", "ours", configs=configs),
            kafka.admin.ConfigResource("TOPIC", "theirs", configs=configs))


def test_alter_and_reset_configs_like_kafka_python(
    admin: AdminClient, theirs: kafka.KafkaAdminClient
) -> None:
    admin.create_topics([NewTopic("ours", 1, 1, config={"cleanup.policy": "compact"}),
                         NewTopic("theirs", 1, 1, config={"cleanup.policy": "compact"})])
    steps: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"retention.ms": "60000", "segment.ms": (AlterConfigOp.SET, "120000")}, {}),
        ({"cleanup.policy": ("APPEND", "delete")}, {}),
        ({"segment.ms": (AlterConfigOp.DELETE, None)}, {}),
    ]
    for configs, kwargs in steps:
        ours, kp = same_changes(configs)
        assert admin.alter_configs([ours], **kwargs) == {"topic": {"ours": "OK"}}
        assert theirs.alter_configs([kp], **kwargs) == {"topic": {"theirs": "OK"}}
        assert topic_settings(admin, "ours") == kafka_python_settings(theirs, "theirs")
    assert topic_settings(admin, "ours") == {"retention.ms": "60000",
                                             "cleanup.policy": "compact,delete"}

    # A value the broker refuses comes back as the error's text, not raised (both).
    ours, kp = same_changes({"retention.ms": "-5"})
    refused = admin.alter_configs([ours])["topic"]["ours"]
    assert "retention.ms: -5" in refused and "[Error 40]" in refused
    assert "retention.ms: -5" in theirs.alter_configs([kp])["topic"]["theirs"]
    # A key the topic does not have is refused before anything is sent (both).
    ours, kp = same_changes({"retention.msec": "1"})
    with pytest.raises(ValueError, match=r"retention\.msec"):
        admin.alter_configs([ours])
    with pytest.raises(ValueError, match=r"retention\.msec"):
        theirs.alter_configs([kp])

    # AlterConfigs (non-incremental) replaces everything: the other settings are carried.
    ours, kp = same_changes({"segment.ms": "300000"})
    assert admin.alter_configs([ours], incremental=False) == {"topic": {"ours": "OK"}}
    assert theirs.alter_configs([kp], incremental=False) == {"topic": {"theirs": "OK"}}
    assert topic_settings(admin, "ours") == kafka_python_settings(theirs, "theirs") == {
        "retention.ms": "60000", "cleanup.policy": "compact,delete", "segment.ms": "300000"}
    with pytest.raises(ValueError, match="incremental=True"):
        admin.alter_configs([ConfigResource("TOPIC", "ours", configs={
            "cleanup.policy": (AlterConfigOp.APPEND, "delete")})], incremental=False)

    # validate_only changes nothing.
    ours, _ = same_changes({"retention.ms": "1000"})
    assert admin.alter_configs([ours], validate_only=True) == {"topic": {"ours": "OK"}}
    assert topic_settings(admin, "ours")["retention.ms"] == "60000"

    # Reset one key, then everything (kafka-python needs configs={} for "everything").
    ours, kp = ConfigResource("TOPIC", "ours", configs=["segment.ms"]), \
        kafka.admin.ConfigResource("TOPIC", "theirs", configs=["segment.ms"])
    assert admin.reset_configs([ours]) == {"topic": {"ours": "OK"}}
    assert theirs.reset_configs([kp]) == {"topic": {"theirs": "OK"}}
    assert topic_settings(admin, "ours") == kafka_python_settings(theirs, "theirs")
    assert "segment.ms" not in topic_settings(admin, "ours")
    assert admin.reset_configs([ConfigResource("TOPIC", "ours")]) == {"topic": {"ours": "OK"}}
    theirs.reset_configs([kafka.admin.ConfigResource("TOPIC", "theirs", configs={})])
    assert topic_settings(admin, "ours") == kafka_python_settings(theirs, "theirs") == {}


def test_incremental_alter_configs_and_broker_resources(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("inc", 1, 1)])
    broker = ConfigResource("BROKER", "0", configs={"log.retention.ms": "7200000"})
    topic = ConfigResource("TOPIC", "inc", configs={"max.message.bytes": "2048"})
    assert admin.incremental_alter_configs([broker, topic]) == {
        "broker": {"0": "OK"}, "topic": {"inc": "OK"}}
    # The topic inherits the broker's new default; only its own value is its own.
    assert topic_settings(admin, "inc") == {"max.message.bytes": "2048",
                                            "retention.ms": "7200000"}
    assert admin.reset_configs([ConfigResource("BROKER", "0", configs=["log.retention.ms"])],
                               incremental=False) == {"broker": {"0": "OK"}}
    assert topic_settings(admin, "inc") == {"max.message.bytes": "2048"}
    with pytest.raises(ValueError, match="broker id"):
        admin.alter_configs([ConfigResource("BROKER", "zero", configs={"x": "1"})])


def test_delete_records_like_kafka_python(cluster: EmbeddedCluster, admin: AdminClient,
                                          theirs: kafka.KafkaAdminClient) -> None:
    admin.create_topics([NewTopic("trim", 2, 1)])
    produce(cluster.bootstrap_servers, "trim", 2, 6)
    ours = admin.delete_records({TopicPartition("trim", 0): 2, TopicPartition("trim", 1): -1})
    kp = theirs.delete_records({kafka.TopicPartition("trim", 0): 4})
    assert ours == {
        TopicPartition("trim", 0): {"partition_index": 0, "low_watermark": 2, "error_code": 0},
        TopicPartition("trim", 1): {"partition_index": 1, "low_watermark": 6, "error_code": 0}}
    assert kp == {kafka.TopicPartition("trim", 0): {"partition_index": 0, "low_watermark": 4,
                                                    "error_code": 0}}
    assert admin.list_partition_offsets({TopicPartition("trim", 0): -2})[
        TopicPartition("trim", 0)].offset == 4
    with pytest.raises(OffsetOutOfRangeError, match="trim-0"):
        admin.delete_records({TopicPartition("trim", 0): 99})
    with pytest.raises(kafka.errors.OffsetOutOfRangeError):
        theirs.delete_records({kafka.TopicPartition("trim", 0): 99})


def test_describe_log_dirs_and_cluster_like_kafka_python(
    cluster: EmbeddedCluster, admin: AdminClient, theirs: kafka.KafkaAdminClient
) -> None:
    admin.create_topics([NewTopic("sized", 2, 1), NewTopic("other", 1, 1)])
    produce(cluster.bootstrap_servers, "sized", 1, 3)

    def without_free_space(answer: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**broker, "log_dirs": [{k: v for k, v in d.items() if k != "usable_bytes"}
                                        for d in broker["log_dirs"]]} for broker in answer]

    for query in ({"sized": [0]}, ["sized"], None):
        ours = admin.describe_log_dirs(query)
        assert without_free_space(ours) == without_free_space(theirs.describe_log_dirs(query))
    (broker,) = admin.describe_log_dirs({"sized": [0, 1]})
    (log_dir,) = broker["log_dirs"]
    sizes = {p["partition_index"]: p["partition_size"] for t in log_dir["topics"]
             for p in t["partitions"]}
    assert sizes[0] > 0 and sizes[1] == 0
    assert admin.describe_cluster() == theirs.describe_cluster()
    assert admin.describe_cluster()["brokers"][0]["broker_id"] == 0


def committed_group(bootstrap: str, group: str, topic: str) -> None:
    """A group that was consumed and committed, and has no members now."""
    with Consumer(topic, bootstrap_servers=bootstrap, group_id=group,
                  auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        poll_until([consumer], lambda: bool(consumer.assignment()))
        consumer.commit({TopicPartition(topic, 0): 1})


def test_delete_groups_like_kafka_python(cluster: EmbeddedCluster, admin: AdminClient,
                                         theirs: kafka.KafkaAdminClient) -> None:
    bootstrap = cluster.bootstrap_servers
    admin.create_topics([NewTopic("grouped", 1, 1)])
    produce(bootstrap, "grouped", 1, 2)
    for group in ("done-ours", "done-theirs"):
        committed_group(bootstrap, group, "grouped")
    with Consumer("grouped", bootstrap_servers=bootstrap, group_id="busy",
                  enable_auto_commit=False) as member:
        poll_until([member], lambda: bool(member.assignment()))
        ours = admin.delete_groups(["done-ours", "busy", "never-was"])
        kp = theirs.delete_groups(["done-theirs", "busy", "never-was"])
    assert ours == {"done-ours": "OK", "busy": "NonEmptyGroupError",
                    "never-was": "GroupIdNotFoundError"}
    assert kp == {"done-theirs": "OK", "busy": "NonEmptyGroupError",
                  "never-was": "GroupIdNotFoundError"}
    assert admin.list_consumer_group_offsets("done-ours") == {}
    assert admin.describe_groups(["done-ours"])["done-ours"].state == "Dead"
    assert admin.delete_groups(["done-ours"]) == {"done-ours": "GroupIdNotFoundError"}
    # The group that had members is intact and can go once they left.
    assert admin.delete_groups(["busy"]) == {"busy": "OK"}


def test_delete_group_offsets_like_kafka_python(cluster: EmbeddedCluster, admin: AdminClient,
                                                theirs: kafka.KafkaAdminClient) -> None:
    bootstrap = cluster.bootstrap_servers
    admin.create_topics([NewTopic("read", 1, 1), NewTopic("dropped", 2, 1)])
    produce(bootstrap, "read", 1, 2)
    offsets = {TopicPartition("read", 0): 1, TopicPartition("dropped", 0): 2,
               TopicPartition("dropped", 1): 3}
    for group in ("od-ours", "od-theirs"):
        assert set(admin.alter_group_offsets(group, offsets).values()) == {NoError}
    with Consumer("read", bootstrap_servers=bootstrap, group_id="od-ours",
                  enable_auto_commit=False) as member:
        poll_until([member], lambda: bool(member.assignment()))
        ours = admin.delete_group_offsets(
            "od-ours", [TopicPartition("read", 0), TopicPartition("dropped", 0)])
    assert ours == {TopicPartition("read", 0): GroupSubscribedToTopicError,
                    TopicPartition("dropped", 0): NoError}
    assert set(admin.list_consumer_group_offsets("od-ours")) == {
        TopicPartition("read", 0), TopicPartition("dropped", 1)}
    kp = theirs.delete_group_offsets("od-theirs", [kafka.TopicPartition("dropped", 0)])
    assert {tp.topic: e.__name__ for tp, e in kp.items()} == {"dropped": "NoError"}
    assert admin.delete_group_offsets("od-ours", []) == {}
    with pytest.raises(GroupIdNotFoundError, match="nobody"):
        admin.delete_group_offsets("nobody", [TopicPartition("read", 0)])
    with pytest.raises(kafka.errors.GroupIdNotFoundError):
        theirs.delete_group_offsets("nobody", [kafka.TopicPartition("read", 0)])


def test_remove_group_members_like_kafka_python(cluster: EmbeddedCluster, admin: AdminClient,
                                                theirs: kafka.KafkaAdminClient) -> None:
    bootstrap = cluster.bootstrap_servers
    admin.create_topics([NewTopic("static", 1, 1)])
    with Consumer("static", bootstrap_servers=bootstrap, group_id="statics",
                  group_instance_id="host-a", enable_auto_commit=False) as member:
        poll_until([member], lambda: bool(member.assignment()))
        assert admin.remove_group_members("statics", [
            MemberToRemove(group_instance_id="host-a"), MemberToRemove(member_id="ghost")]) \
            == {"host-a": NoError, "ghost": UnknownMemberIdError}
        assert admin.describe_groups(["statics"])["statics"].members == []
        kp = theirs.remove_group_members("statics", [
            kafka.admin.MemberToRemove(member_id="ghost")])
        assert {k: v.__name__ for k, v in kp.items()} == {"ghost": "UnknownMemberIdError"}
    with pytest.raises(ValueError, match="member_id or a group_instance_id"):
        admin.remove_group_members("statics", [MemberToRemove()])
