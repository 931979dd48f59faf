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
from kafkalite_server.config_values import (
    LONG_MAX,
    boolean,
    choice,
    decimal,
    format_value,
    integer,
    never_when_max,
)

_DAY_MS = 24 * 60 * 60 * 1000
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
    # compaction (the log cleaner) and time-based rolling
    delete_retention_ms: int = _DAY_MS
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    segment_jitter_ms: int = 0

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compacts(self) -> bool:
        """The log cleaner compacts logs with ``compact`` (alone or with ``delete``)."""
        return "compact" in self.cleanup_policy.split(",")

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
            rows.append((key, format_value(value), value == getattr(reference, _field(key))))
        return rows


def _field(key: str) -> str:
    return key.replace(".", "_")


def _cleanup_policy(key: str, text: str) -> str:
    parts = [part.strip() for part in text.split(",")]
    if not parts or any(part not in CLEANUP_POLICIES for part in parts):
        raise ConfigError(key, f"{text!r} is not a list of {', '.join(CLEANUP_POLICIES)}")
    return ",".join(policy for policy in ("compact", "delete") if policy in parts)


_INT32_MAX = 2**31 - 1
_SPECS: dict[str, Callable[[str, str], Any]] = {
    "segment.bytes": integer(14, _INT32_MAX),
    "segment.ms": integer(1),
    "segment.index.bytes": integer(12, _INT32_MAX),
    "index.interval.bytes": integer(0, _INT32_MAX),
    "retention.ms": integer(-1),
    "retention.bytes": integer(-(2**63)),
    "cleanup.policy": _cleanup_policy,
    "message.timestamp.type": choice(TIMESTAMP_TYPES),
    "max.message.bytes": integer(0, _INT32_MAX),
    "flush.messages": never_when_max(1),
    "flush.ms": never_when_max(0),
    "file.delete.delay.ms": integer(0),
    "min.insync.replicas": integer(1, _INT32_MAX),
    "preallocate": boolean,
    "delete.retention.ms": integer(0),
    "min.cleanable.dirty.ratio": decimal(0.0, 1.0),
    "min.compaction.lag.ms": integer(0),
    "max.compaction.lag.ms": integer(1),
    "segment.jitter.ms": integer(0),
}

TOPIC_CONFIG_KEYS: tuple[str, ...] = tuple(_SPECS)
"""Every topic-level key kafkalite understands, in DescribeConfigs order."""
