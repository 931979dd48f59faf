"""BrokerConfig: Kafka key names, defaults, aliases and errors that name the key."""

from __future__ import annotations

import pytest

from kafkalite.errors import ConfigError
from kafkalite.protocol.java_properties import parse_properties
from kafkalite_server.config import BrokerConfig


def test_defaults_are_kafkas():
    config = BrokerConfig()
    assert (config.num_partitions, config.default_replication_factor) == (1, 1)
    assert config.auto_create_topics_enable and config.delete_topic_enable
    assert config.socket_request_max_bytes == 100 * 1024 * 1024
    assert config.offsets_topic_num_partitions == 50
    assert (config.group_initial_rebalance_delay_ms, config.group_min_session_timeout_ms,
            config.group_max_session_timeout_ms) == (3000, 6000, 1_800_000)
    assert config.log_retention_ms == 168 * 3600 * 1000


def test_aliases_follow_kafka_precedence():
    hours_only = BrokerConfig.from_properties({"log.retention.hours": "2"})
    assert hours_only.log_retention_ms == 2 * 3600 * 1000
    both = BrokerConfig.from_properties({"log.retention.hours": "2",
                                         "log.retention.minutes": "3"})
    assert both.log_retention_ms == 3 * 60 * 1000
    all_three = BrokerConfig.from_properties({"log.retention.ms": "5",
                                              "log.retention.minutes": "3"})
    assert all_three.log_retention_ms == 5
    assert BrokerConfig.from_properties({"log.retention.hours": "-1"}).log_retention_ms == -1
    dirs = BrokerConfig.from_properties({"log.dir": "/a", "log.dirs": "/b, /c"})
    assert dirs.log_dirs == ("/b", "/c")
    assert BrokerConfig.from_properties({"log.roll.hours": "1"}).log_roll_ms == 3600 * 1000


@pytest.mark.parametrize(("key", "value"), [
    ("num.partitions", "0"), ("num.partitions", "many"), ("auto.create.topics.enable", "yes"),
    ("log.cleanup.policy", "shred"), ("log.message.timestamp.type", "Now"),
    ("port", "70000"), ("log.dirs", " , "), ("not.a.key", "1"),
])
def test_bad_settings_name_the_key(key, value):
    with pytest.raises(ConfigError) as caught:
        BrokerConfig.from_properties({key: value})
    assert caught.value.key == key


def test_topic_defaults_derive_from_broker_settings():
    config = BrokerConfig.from_properties({
        "log.segment.bytes": "2048", "log.retention.bytes": "4096",
        "log.cleanup.policy": "compact,delete", "message.max.bytes": "999",
        "log.flush.interval.messages": "10", "min.insync.replicas": "2"})
    log_config = config.log_config()
    assert (log_config.segment_bytes, log_config.retention_bytes) == (2048, 4096)
    assert log_config.cleanup_policy == "compact,delete"
    assert (log_config.max_message_bytes, log_config.flush_messages) == (999, 10)
    assert log_config.min_insync_replicas == 2


def test_describe_marks_explicit_settings():
    rows = {key: (value, default) for key, value, default in
            BrokerConfig.from_properties({"num.partitions": "3"}).describe()}
    assert rows["num.partitions"] == ("3", False)
    assert rows["delete.topic.enable"] == ("true", True)


def test_properties_syntax():
    text = ["# comment", "! also a comment", "", "a.b = 1", "c.d:2", "e.f 3",
            "long.value = x,\\", "   y", "url=http://h:1"]
    assert parse_properties(text) == {"a.b": "1", "c.d": "2", "e.f": "3",
                                      "long.value": "x,y", "url": "http://h:1"}
