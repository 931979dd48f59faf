"""The consumer's configuration: kafka-python's names, the Java consumer's defaults, validated.

Every key is checked when the consumer is created: an unknown key or a bad value raises
:class:`~kafkalite.errors.ConfigError` naming the key, so a typo never silently falls back to
a default. Assignors and deserializers are resolved here too, so they fail just as early.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalite.client.client import CLIENT_DEFAULTS, validate_client_config
from kafkalite.consumer.assignors import RangeAssignor, RoundRobinAssignor, resolve_assignors
from kafkalite.errors import ConfigError
from kafkalite.properties import unknown_config
from kafkalite.serde import resolve_deserializer

CONSUMER_DEFAULTS: Mapping[str, Any] = {
    "group_id": None,
    "group_instance_id": None,
    "group_protocol": "classic",
    "group_remote_assignor": None,
    "partition_assignment_strategy": (RangeAssignor, RoundRobinAssignor),
    "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000,
    "auto_offset_reset": "latest",
    "session_timeout_ms": 45000,
    "heartbeat_interval_ms": 3000,
    "max_poll_interval_ms": 300000,
    "max_poll_records": 500,
    "fetch_min_bytes": 1,
    "fetch_max_wait_ms": 500,
    "fetch_max_bytes": 52428800,
    "max_partition_fetch_bytes": 1048576,
    "check_crcs": True,
    "isolation_level": "read_uncommitted",
    "exclude_internal_topics": True,
    "default_api_timeout_ms": 60000,
    "key_deserializer": None,
    "value_deserializer": None,
    "default_offset_commit_callback": None,
    "metric_group_prefix": "consumer",
    "client_rack": "",
    "enable_incremental_fetch_sessions": True,
}
"""Consumer-only settings; the client settings (:data:`CLIENT_DEFAULTS`) apply too.

``partition_assignment_strategy`` takes assignor instances, classes or names, in preference
order; the default (range, then round robin) is kafka-python's and lets a group mix with
Java and librdkafka members on their defaults.
"""

IGNORED_CONSUMER_KEYS: Mapping[str, str] = {
    "enable_incremental_fetch_sessions": "every fetch is a full fetch request",
}
"""Consumer keys accepted without effect, each with the reason (the client's are in
:mod:`kafkalite.client.settings`)."""

_POSITIVE_INTS = ("auto_commit_interval_ms", "session_timeout_ms", "heartbeat_interval_ms",
                  "max_poll_interval_ms", "max_poll_records", "fetch_min_bytes",
                  "fetch_max_bytes", "max_partition_fetch_bytes", "default_api_timeout_ms")
_GROUP_PROTOCOLS = ("classic", "consumer")
"""``classic``: JoinGroup/SyncGroup, the client assigns; ``consumer``: KIP-848, the broker
assigns and partitions move incrementally."""
_OFFSET_RESETS = ("earliest", "latest", "none")
_ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}


def validate_consumer_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``config`` over the defaults and check every value; returns the full config.

    In the result ``partition_assignment_strategy`` is a list of Assignor instances,
    ``key_deserializer`` / ``value_deserializer`` are Deserializer objects and
    ``isolation_level`` is the wire value (0 or 1).
    """
    for key in config:
        if key not in CLIENT_DEFAULTS and key not in CONSUMER_DEFAULTS:
            raise unknown_config(key, {*CLIENT_DEFAULTS, *CONSUMER_DEFAULTS}, "consumer config")
    client_part = {k: v for k, v in config.items() if k in CLIENT_DEFAULTS}
    merged = {**validate_client_config(client_part), **CONSUMER_DEFAULTS}
    merged.update((k, v) for k, v in config.items() if k in CONSUMER_DEFAULTS)

    for key in _POSITIVE_INTS:
        _require_int(key, merged[key], minimum=1)
    _require_int("fetch_max_wait_ms", merged["fetch_max_wait_ms"], minimum=0)
    for key in ("enable_auto_commit", "check_crcs", "exclude_internal_topics"):
        if not isinstance(merged[key], bool):
            raise ConfigError(key, f"must be True or False, not {merged[key]!r}")
    for key in ("group_id", "group_instance_id"):
        value = merged[key]
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigError(key, f"must be a non-empty string or None, not {value!r}")
    if merged["group_instance_id"] is not None and merged["group_id"] is None:
        raise ConfigError("group_instance_id", "needs a group_id")
    if merged["group_protocol"] not in _GROUP_PROTOCOLS:
        raise ConfigError("group_protocol", f"must be one of {', '.join(_GROUP_PROTOCOLS)}, "
                          f"not {merged['group_protocol']!r}")
    assignor = merged["group_remote_assignor"]
    if assignor is not None and (not isinstance(assignor, str) or not assignor):
        raise ConfigError("group_remote_assignor", f"must be a non-empty string or None, "
                          f"not {assignor!r}")
    if merged["group_protocol"] == "consumer" and merged["group_instance_id"] is not None:
        raise ConfigError("group_instance_id", "is not supported with group_protocol="
                          "'consumer' yet")
    if merged["auto_offset_reset"] not in _OFFSET_RESETS:
        raise ConfigError("auto_offset_reset", f"must be one of {', '.join(_OFFSET_RESETS)}, "
                          f"not {merged['auto_offset_reset']!r}")
    level = merged["isolation_level"]
    if level not in _ISOLATION_LEVELS:
        raise ConfigError("isolation_level", "must be 'read_uncommitted' or 'read_committed', "
                          f"not {level!r}")
    merged["isolation_level"] = _ISOLATION_LEVELS[level]
    callback = merged["default_offset_commit_callback"]
    if callback is not None and not callable(callback):
        raise ConfigError("default_offset_commit_callback", "must be a callable or None")
    if merged["heartbeat_interval_ms"] >= merged["session_timeout_ms"]:
        raise ConfigError("heartbeat_interval_ms", "must be lower than session_timeout_ms")
    merged["partition_assignment_strategy"] = resolve_assignors(
        merged["partition_assignment_strategy"])
    for key in ("key_deserializer", "value_deserializer"):
        merged[key] = resolve_deserializer(merged[key], key)
    return merged


def _require_int(key: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(key, f"must be an integer >= {minimum}, not {value!r}")
