"""The producer's configuration: kafka-python's names, the Java producer's defaults, validated.

Every key is checked when the producer is created: an unknown key or a bad value raises
:class:`~kafkalite.errors.ConfigError` naming the key, so a typo never silently falls back to
a default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.client.client import CLIENT_DEFAULTS, validate_client_config
from kafkalite.errors import ConfigError, UnsupportedCodecError
from kafkalite.properties import unknown_config
from kafkalite.protocol.primitives import INT32_MAX
from kafkalite.records import codec_id

PRODUCER_DEFAULTS: Mapping[str, Any] = {
    "acks": "all",
    "batch_size": 16384,
    "linger_ms": 5,
    "buffer_memory": 33554432,
    "max_block_ms": 60000,
    "compression_type": None,
    "max_request_size": 1048576,
    "retries": INT32_MAX,
    "delivery_timeout_ms": 120000,
    "enable_idempotence": None,
    "partitioner": "default",
    "key_serializer": None,
    "value_serializer": None,
    "transactional_id": None,
    "transaction_timeout_ms": 60000,
}
"""Producer-only settings; the client settings (:data:`CLIENT_DEFAULTS`) apply too.

``acks="all"`` and idempotence are the Java producer's defaults since Kafka 3.0;
``enable_idempotence=None`` means "on unless the other settings rule it out" (acks other than
all, retries 0, more than 5 requests in flight), as the Java producer does when the user has
not set it explicitly. ``linger_ms=5`` is the Java default since Kafka 4.0.
"""

IGNORED_PRODUCER_KEYS: Mapping[str, str] = {}
"""Producer keys accepted without effect, each with the reason (the client's are in
:mod:`kafkalite.client.settings`)."""

REFUSED_PRODUCER_KEYS: Mapping[str, str] = {}
"""Producer keys accepted only at their default, each with the rule."""

_MAX_RETRIES = INT32_MAX
"""Java's Integer.MAX_VALUE: what kafka-python's ``retries=float('inf')`` means."""

_NON_NEGATIVE_INTS = ("batch_size", "linger_ms", "buffer_memory", "max_block_ms",
                      "max_request_size", "retries", "delivery_timeout_ms")
_ACKS = {"all": -1, -1: -1, 0: 0, 1: 1, "0": 0, "1": 1, "-1": -1}


def validate_producer_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``config`` over the defaults and check every value; returns the full config.

    ``acks`` comes back normalised to -1, 0 or 1 and ``enable_idempotence`` to a bool. The
    producer resolves (and so validates) ``partitioner`` and the serializers itself.
    """
    client_part = {k: v for k, v in config.items() if k in CLIENT_DEFAULTS}
    for key in config:
        if key not in CLIENT_DEFAULTS and key not in PRODUCER_DEFAULTS:
            raise unknown_config(key, {*CLIENT_DEFAULTS, *PRODUCER_DEFAULTS}, "producer config")
    merged = {**validate_client_config(client_part), **PRODUCER_DEFAULTS}
    merged.update((k, v) for k, v in config.items() if k in PRODUCER_DEFAULTS)
    if merged["retries"] == float("inf"):
        merged["retries"] = _MAX_RETRIES
    if merged["transactional_id"] is not None:
        if not isinstance(merged["transactional_id"], str) or not merged["transactional_id"]:
            raise ConfigError("transactional_id", "must be a non-empty string or None")
        if merged["enable_idempotence"] is False:
            raise ConfigError("enable_idempotence", "transactional_id needs idempotence")
    _require_int("transaction_timeout_ms", merged["transaction_timeout_ms"], minimum=1)

    for key in _NON_NEGATIVE_INTS:
        _require_int(key, merged[key], minimum=0)
    _require_int("batch_size", merged["batch_size"], minimum=1)
    _require_int("max_request_size", merged["max_request_size"], minimum=1)
    acks = merged["acks"]
    if isinstance(acks, bool) or acks not in _ACKS:
        raise ConfigError("acks", f"must be 0, 1 or 'all' (-1), not {acks!r}")
    merged["acks"] = _ACKS[acks]
    try:
        codec_id(merged["compression_type"])
    except (UnsupportedCodecError, ValueError, TypeError) as exc:
        raise ConfigError("compression_type", str(exc)) from None
    if merged["delivery_timeout_ms"] < merged["linger_ms"] + merged["request_timeout_ms"]:
        raise ConfigError("delivery_timeout_ms", "must be at least linger_ms + "
                          "request_timeout_ms")
    merged["enable_idempotence"] = _idempotence(merged)
    if merged["transactional_id"] is not None and not merged["enable_idempotence"]:
        raise ConfigError("transactional_id", "needs idempotence: "
                          + "; ".join(_idempotence_conflicts(merged)))
    return merged


def _require_int(key: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(key, f"must be an integer >= {minimum}, not {value!r}")


def _idempotence(config: Mapping[str, Any]) -> bool:
    requested = config["enable_idempotence"]
    conflicts = _idempotence_conflicts(config)
    if requested is None:
        return not conflicts
    if not isinstance(requested, bool):
        raise ConfigError("enable_idempotence", f"must be True, False or None, not {requested!r}")
    if requested and conflicts:
        raise ConfigError("enable_idempotence", conflicts[0])
    return requested


def _idempotence_conflicts(config: Mapping[str, Any]) -> list[str]:
    checks: list[tuple[Callable[[Mapping[str, Any]], bool], str]] = [
        (lambda c: c["acks"] != -1, "needs acks='all'"),
        (lambda c: c["retries"] == 0, "needs retries > 0"),
        (lambda c: c["max_in_flight_requests_per_connection"] > 5,
         "needs max_in_flight_requests_per_connection <= 5"),
    ]
    return [message for check, message in checks if check(config)]
