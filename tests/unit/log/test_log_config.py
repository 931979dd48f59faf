"""LogConfig: Kafka's topic-level names and defaults, parsing, errors naming the key."""

from __future__ import annotations

import pytest

from kafkalite.errors import ConfigError
from kafkalite_server.log.config import TOPIC_CONFIG_KEYS, LogConfig


def test_defaults_are_kafkas() -> None:
    rows = {key: (value, is_default) for key, value, is_default in LogConfig().describe()}
    assert set(rows) == set(TOPIC_CONFIG_KEYS)
    assert rows["segment.bytes"] == ("1073741824", True)
    assert rows["retention.ms"] == ("604800000", True)
    assert rows["max.message.bytes"] == ("1048588", True)
    assert rows["index.interval.bytes"] == ("4096", True)
    assert rows["flush.messages"] == ("9223372036854775807", True)
    assert rows["preallocate"] == ("false", True)


def test_overrides_are_parsed_and_reported_as_non_default() -> None:
    config = LogConfig.from_topic_configs(LogConfig(), {
        "retention.ms": "-1", "cleanup.policy": "delete,compact", "flush.messages": "10",
        "message.timestamp.type": "LogAppendTime", "preallocate": "TRUE"})
    assert config.retention_ms == -1 and config.flush_messages == 10 and config.preallocate
    assert config.cleanup_policy == "delete,compact" and config.deletes_old_segments
    assert config.log_append_time
    rows = {key: (value, is_default) for key, value, is_default in config.describe()}
    assert rows["retention.ms"] == ("-1", False)
    assert rows["segment.bytes"] == ("1073741824", True)
    never = LogConfig.from_topic_configs(config, {"flush.messages": str(2**63 - 1)})
    assert never.flush_messages is None


def test_describe_compares_with_the_given_defaults() -> None:
    broker = LogConfig(segment_bytes=1 << 20)
    rows = {key: is_default for key, _, is_default in broker.describe(defaults=broker)}
    assert rows["segment.bytes"]


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("no.such.key", "1", "unknown"),
    ("segment.bytes", "big", "not an integer"),
    ("segment.bytes", "3", "outside"),
    ("retention.ms", "-2", "outside"),
    ("cleanup.policy", "forever", "not a list"),
    ("message.timestamp.type", "WallClock", "not one of"),
    ("preallocate", "yes", "not true or false"),
    ("min.insync.replicas", "0", "outside"),
    ("compression.type", "brotli", "not one of"),
    ("min.cleanable.dirty.ratio", "1.5", "outside"),
    ("min.cleanable.dirty.ratio", "half", "not a number"),
    ("delete.retention.ms", "-1", "outside"),
    ("max.compaction.lag.ms", "0", "outside"),
    ("segment.index.bytes", "3", "outside"),
    ("message.format.version", "9.9", "not a Kafka version"),
    ("leader.replication.throttled.replicas", "0:1,x", "partitionId:brokerId"),
    ("remote.storage.enable", "true", "tiered storage"),
    ("local.retention.ms", "-3", "outside"),
    ("compression.gzip.level", "0", "not a gzip level"),
    ("unclean.leader.election.enable", "maybe", "not true or false"),
])
def test_bad_overrides_name_the_key(key: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        LogConfig.from_topic_configs(LogConfig(), {key: value})
    assert caught.value.key == key


def test_every_kafka_3_topic_key_is_accepted_with_kafkas_default_text() -> None:
    kafka_3_keys = {
        "cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level",
        "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms",
        "flush.messages", "flush.ms", "follower.replication.throttled.replicas",
        "index.interval.bytes", "leader.replication.throttled.replicas",
        "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms",
        "max.message.bytes", "message.downconversion.enable", "message.format.version",
        "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms", "message.timestamp.type",
        "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas",
        "preallocate", "remote.log.copy.disable", "remote.log.delete.on.disable",
        "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes",
        "segment.index.bytes", "segment.jitter.ms", "segment.ms",
        "unclean.leader.election.enable"}
    assert set(TOPIC_CONFIG_KEYS) == kafka_3_keys
    defaults = {key: value for key, value, _ in LogConfig().describe()}
    assert defaults["compression.type"] == "producer"
    assert defaults["min.cleanable.dirty.ratio"] == "0.5"
    assert defaults["max.compaction.lag.ms"] == str(2**63 - 1)
    assert defaults["message.format.version"] == "3.0-IV1"
    assert defaults["local.retention.ms"] == "-2"
    config = LogConfig.from_topic_configs(LogConfig(), {
        "compression.type": "GZIP", "min.cleanable.dirty.ratio": "0.25",
        "leader.replication.throttled.replicas": "0:1, 1:2", "message.format.version": "0.10.0",
        "remote.storage.enable": "false", "segment.jitter.ms": "100"})
    assert config.compression_type == "gzip" and config.min_cleanable_dirty_ratio == 0.25
    assert config.value_text("leader.replication.throttled.replicas") == "0:1,1:2"


def test_min_compaction_lag_above_max_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"above max\.compaction\.lag\.ms") as caught:
        LogConfig.from_topic_configs(LogConfig(), {"min.compaction.lag.ms": "10",
                                                   "max.compaction.lag.ms": "5"})
    assert caught.value.key == "min.compaction.lag.ms"
