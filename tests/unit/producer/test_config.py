"""Producer and client configuration validation."""

from __future__ import annotations

import pytest

from kafkalite.client.client import parse_bootstrap_servers
from kafkalite.errors import ConfigError
from kafkalite.producer.config import validate_producer_config


def test_defaults_follow_the_java_producer() -> None:
    config = validate_producer_config({})
    assert config["acks"] == -1
    assert config["enable_idempotence"] is True
    assert config["batch_size"] == 16384
    assert config["linger_ms"] == 5
    assert config["retries"] == 2147483647
    assert config["delivery_timeout_ms"] == 120000


@pytest.mark.parametrize("key", ["batchsize", "linger.ms", "group_id"])
def test_unknown_keys_are_named(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_producer_config({key: 1})
    assert info.value.key == key


@pytest.mark.parametrize(("key", "value"), [
    ("acks", 2), ("acks", True), ("acks", "some"), ("batch_size", 0), ("linger_ms", -1),
    ("retries", "3"), ("compression_type", "brotli"), ("max_request_size", 1.5),
    ("request_timeout_ms", -5), ("max_in_flight_requests_per_connection", 0),
    ("enable_idempotence", "yes"), ("bootstrap_servers", "host:notaport"),
    ("bootstrap_servers", ""), ("delivery_timeout_ms", 10),
])
def test_bad_values_are_named(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        validate_producer_config({key: value})
    assert info.value.key == key


@pytest.mark.parametrize(("acks", "expected"), [("all", -1), (-1, -1), (0, 0), (1, 1), ("1", 1)])
def test_acks_are_normalised(acks: object, expected: int) -> None:
    assert validate_producer_config({"acks": acks})["acks"] == expected


def test_idempotence_defaults_off_when_settings_rule_it_out() -> None:
    assert validate_producer_config({"acks": 1})["enable_idempotence"] is False
    assert validate_producer_config({"retries": 0})["enable_idempotence"] is False


def test_explicit_idempotence_with_conflicting_acks_is_an_error() -> None:
    with pytest.raises(ConfigError, match="acks") as info:
        validate_producer_config({"acks": 1, "enable_idempotence": True})
    assert info.value.key == "enable_idempotence"


@pytest.mark.parametrize("codec", [None, "none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_is_accepted(codec: str | None) -> None:
    assert validate_producer_config({"compression_type": codec})["compression_type"] == codec


@pytest.mark.parametrize(("value", "expected"), [
    ("a:1,b:2", [("a", 1), ("b", 2)]),
    (["a:1", " b:2 "], [("a", 1), ("b", 2)]),
    ("localhost", [("localhost", 9092)]),
    ("[::1]:9093", [("::1", 9093)]),
])
def test_bootstrap_servers_parse(value: object, expected: list) -> None:
    assert parse_bootstrap_servers(value) == expected  # type: ignore[arg-type]
