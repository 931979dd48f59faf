"""Consumer configuration: defaults, validation errors naming the key, resolved objects."""

from __future__ import annotations

import pytest

from kafkalite.consumer.assignors import RangeAssignor, RoundRobinAssignor, StickyAssignor
from kafkalite.consumer.config import validate_consumer_config
from kafkalite.errors import ConfigError
from kafkalite.serde import BytesDeserializer, StringDeserializer


def test_defaults_follow_the_java_consumer() -> None:
    config = validate_consumer_config({})
    assert config["group_id"] is None
    assert config["enable_auto_commit"] is True
    assert config["auto_offset_reset"] == "latest"
    assert config["session_timeout_ms"] == 45000
    assert config["max_poll_records"] == 500
    assert config["isolation_level"] == 0
    assert [type(a) for a in config["partition_assignment_strategy"]] == \
        [RangeAssignor, RoundRobinAssignor]
    assert isinstance(config["value_deserializer"], BytesDeserializer)


def test_every_consumer_gets_its_own_assignor_instances() -> None:
    first = validate_consumer_config({})["partition_assignment_strategy"][0]
    second = validate_consumer_config({})["partition_assignment_strategy"][0]
    assert first is not second


def test_names_classes_and_deserializers_resolve() -> None:
    config = validate_consumer_config({
        "partition_assignment_strategy": ["sticky", RangeAssignor],
        "value_deserializer": StringDeserializer, "isolation_level": "read_committed",
        "request_timeout_ms": 1000})
    assert [a.name for a in config["partition_assignment_strategy"]] == ["sticky", "range"]
    assert isinstance(config["partition_assignment_strategy"][0], StickyAssignor)
    assert isinstance(config["value_deserializer"], StringDeserializer)
    assert config["isolation_level"] == 1
    assert config["request_timeout_ms"] == 1000


@pytest.mark.parametrize(("key", "value"), [
    ("fetch_max_bytes", 0),
    ("max_poll_records", "10"),
    ("session_timeout_ms", True),
    ("auto_offset_reset", "smallest"),
    ("isolation_level", 1),
    ("enable_auto_commit", "yes"),
    ("group_id", ""),
    ("partition_assignment_strategy", ["nonesuch"]),
    ("partition_assignment_strategy", []),
    ("value_deserializer", 42),
    ("request_timeout_ms", -1),
    ("fetch_max_wait_ms", -5),
    ("group_instance_id", "static-1"),
])
def test_bad_values_name_their_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        validate_consumer_config({key: value})
    assert info.value.key == key


def test_unknown_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="max_poll_record"):
        validate_consumer_config({"max_poll_record": 10})


def test_heartbeat_must_be_below_session_timeout() -> None:
    with pytest.raises(ConfigError) as info:
        validate_consumer_config({"session_timeout_ms": 6000, "heartbeat_interval_ms": 6000})
    assert info.value.key == "heartbeat_interval_ms"
