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
    assert config.cleanup_policy == "compact,delete" and config.deletes_old_segments
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
])
def test_bad_overrides_name_the_key(key: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        LogConfig.from_topic_configs(LogConfig(), {key: value})
    assert caught.value.key == key
