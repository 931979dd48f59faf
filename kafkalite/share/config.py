"""The share consumer's configuration: kafka-python-style snake_case names of the Java
share consumer's settings, with its defaults, validated when the consumer is created (an
unknown key or a bad value raises :class:`~kafkalite.errors.ConfigError` naming it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalite.client.client import CLIENT_DEFAULTS, validate_client_config
from kafkalite.errors import ConfigError
from kafkalite.properties import unknown_config
from kafkalite.serde import resolve_deserializer

IMPLICIT, EXPLICIT = "implicit", "explicit"

SHARE_CONSUMER_DEFAULTS: Mapping[str, Any] = {
    "group_id": None,
    "share_acknowledgement_mode": IMPLICIT,
    "max_poll_records": 500,
    "fetch_min_bytes": 1,
    "fetch_max_wait_ms": 500,
    "fetch_max_bytes": 52428800,
    "default_api_timeout_ms": 60000,
    "key_deserializer": None,
    "value_deserializer": None,
    "client_rack": None,
    "check_crcs": True,
}
"""Share-consumer settings; the client settings (:data:`CLIENT_DEFAULTS`) apply too.

``share_acknowledgement_mode``: ``implicit`` (the records of a poll are accepted by the
next poll, commit or close) or ``explicit`` (each record is acknowledged with
``acknowledge``). There is no ``auto_offset_reset``: where a share group starts is the
group config ``share.auto.offset.reset``, set with the AdminClient."""

_POSITIVE_INTS = ("max_poll_records", "fetch_min_bytes", "fetch_max_bytes",
                  "default_api_timeout_ms")


def validate_share_consumer_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` merged over the defaults, every value checked; deserializers resolved."""
    for key in config:
        if key not in CLIENT_DEFAULTS and key not in SHARE_CONSUMER_DEFAULTS:
            raise unknown_config(key, {*CLIENT_DEFAULTS, *SHARE_CONSUMER_DEFAULTS},
                                 "share consumer config")
    merged = {**validate_client_config({k: v for k, v in config.items()
                                        if k in CLIENT_DEFAULTS}),
              **SHARE_CONSUMER_DEFAULTS}
    merged.update((k, v) for k, v in config.items() if k in SHARE_CONSUMER_DEFAULTS)
    group_id = merged["group_id"]
    if not isinstance(group_id, str) or not group_id:
        raise ConfigError("group_id", f"a share consumer needs a group id, not {group_id!r}")
    if merged["share_acknowledgement_mode"] not in (IMPLICIT, EXPLICIT):
        raise ConfigError("share_acknowledgement_mode",
                          f"must be {IMPLICIT!r} or {EXPLICIT!r}, "
                          f"not {merged['share_acknowledgement_mode']!r}")
    for key in _POSITIVE_INTS:
        _require_int(key, merged[key], minimum=1)
    _require_int("fetch_max_wait_ms", merged["fetch_max_wait_ms"], minimum=0)
    if not isinstance(merged["check_crcs"], bool):
        raise ConfigError("check_crcs", f"must be True or False, not {merged['check_crcs']!r}")
    rack = merged["client_rack"]
    if rack is not None and not isinstance(rack, str):
        raise ConfigError("client_rack", f"must be a string or None, not {rack!r}")
    for key in ("key_deserializer", "value_deserializer"):
        merged[key] = resolve_deserializer(merged[key], key)
    return merged


def _require_int(key: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(key, f"must be an integer >= {minimum}, not {value!r}")
