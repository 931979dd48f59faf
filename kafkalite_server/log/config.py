"""Per-topic log settings under Kafka's topic-level config names, with Kafka's defaults.

The broker keeps one :class:`LogConfig` per topic: the broker-wide defaults overridden by
the topic's own settings (CreateTopics / AlterConfigs). Values arrive as strings from the
wire, so parsing and validation live here, next to the names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import ConfigError

_DAY_MS = 24 * 60 * 60 * 1000
_LONG_MAX = 2**63 - 1
"""Kafka's "never" for flush.messages / flush.ms; kafkalite stores it as ``None``."""

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("delete", "compact")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one topic's logs; field names are Kafka's keys with ``_`` for ``.``.

    ``preallocate`` and ``min.insync.replicas`` are accepted and described but not used by
    the log itself: segments grow as written (no preallocation), and min ISR is the
    replication layer's to enforce.
    """

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * _DAY_MS
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * _DAY_MS
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    message_timestamp_type: str = "CreateTime"
    max_message_bytes: int = 1024 * 1024 + 12
    flush_messages: int | None = None
    flush_ms: int | None = None
    file_delete_delay_ms: int = 60000
    min_insync_replicas: int = 1
    preallocate: bool = False

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def deletes_old_segments(self) -> bool:
        """Time/size retention applies only with the ``delete`` policy."""
        return "delete" in self.cleanup_policy.split(",")

    @classmethod
    def from_topic_configs(cls, base: LogConfig, overrides: Mapping[str, str]) -> LogConfig:
        """``base`` with each override parsed and checked; a bad key or value names it."""
        changes: dict[str, Any] = {}
        for key, text in overrides.items():
            spec = _SPECS.get(key)
            if spec is None:
                raise ConfigError(key, "unknown topic config")
            changes[_field(key)] = spec(key, str(text).strip())
        return dataclasses.replace(base, **changes)

    def describe(self, defaults: LogConfig | None = None) -> list[tuple[str, str, bool]]:
        """(key, value as Kafka prints it, equals the default) for DescribeConfigs.

        ``defaults`` is what "default" means to the caller (the broker-wide config);
        Kafka's own defaults when omitted.
        """
        reference = defaults if defaults is not None else LogConfig()
        rows = []
        for key in TOPIC_CONFIG_KEYS:
            value = getattr(self, _field(key))
            rows.append((key, _format(value), value == getattr(reference, _field(key))))
        return rows


def _field(key: str) -> str:
    return key.replace(".", "_")


def _format(value: object) -> str:
    if value is None:
        return str(_LONG_MAX)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _integer(minimum: int, maximum: int = _LONG_MAX) -> Callable[[str, str], int]:
    def parse(key: str, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(key, f"{text!r} is not an integer") from None
        if not minimum <= value <= maximum:
            raise ConfigError(key, f"{value} is outside [{minimum}, {maximum}]")
        return value
    return parse


def _never_when_max(minimum: int) -> Callable[[str, str], int | None]:
    """flush.* settings: Long.MAX_VALUE (Kafka's default) means never."""
    parse_int = _integer(minimum)

    def parse(key: str, text: str) -> int | None:
        value = parse_int(key, text)
        return None if value == _LONG_MAX else value
    return parse


def _choice(options: tuple[str, ...]) -> Callable[[str, str], str]:
    def parse(key: str, text: str) -> str:
        if text not in options:
            raise ConfigError(key, f"{text!r} is not one of {', '.join(options)}")
        return text
    return parse


def _cleanup_policy(key: str, text: str) -> str:
    parts = [part.strip() for part in text.split(",")]
    if not parts or any(part not in CLEANUP_POLICIES for part in parts):
        raise ConfigError(key, f"{text!r} is not a list of {', '.join(CLEANUP_POLICIES)}")
    return ",".join(policy for policy in ("compact", "delete") if policy in parts)


def _boolean(key: str, text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ConfigError(key, f"{text!r} is not true or false")
    return lowered == "true"


_INT32_MAX = 2**31 - 1
_SPECS: dict[str, Callable[[str, str], Any]] = {
    "segment.bytes": _integer(14, _INT32_MAX),
    "segment.ms": _integer(1),
    "segment.index.bytes": _integer(12, _INT32_MAX),
    "index.interval.bytes": _integer(0, _INT32_MAX),
    "retention.ms": _integer(-1),
    "retention.bytes": _integer(-(2**63)),
    "cleanup.policy": _cleanup_policy,
    "message.timestamp.type": _choice(TIMESTAMP_TYPES),
    "max.message.bytes": _integer(0, _INT32_MAX),
    "flush.messages": _never_when_max(1),
    "flush.ms": _never_when_max(0),
    "file.delete.delay.ms": _integer(0),
    "min.insync.replicas": _integer(1, _INT32_MAX),
    "preallocate": _boolean,
}

TOPIC_CONFIG_KEYS: tuple[str, ...] = tuple(_SPECS)
"""Every topic-level key kafkalite understands, in DescribeConfigs order."""
