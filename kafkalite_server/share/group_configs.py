"""Share groups' group configs (Kafka's GROUP config resource): what a group may set for
itself, over the broker's ``group.share.*`` defaults.

- ``share.auto.offset.reset``: where a share partition starts when the group first reads
  it: ``latest`` (Kafka's default: records produced from then on) or ``earliest``.
- ``share.isolation.level``: ``read_uncommitted`` (default) or ``read_committed`` (records
  of aborted transactions are never handed out; reads stop at the last stable offset).
- ``share.record.lock.duration.ms``: how long a member holds an acquired record, within
  ``group.share.min.record.lock.duration.ms`` and ``group.share.max.record.lock.duration.ms``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite.protocol.config_codes import ConfigSourceType as ConfigSource
from kafkalite.protocol.config_codes import ConfigType
from kafkalite_server.config import BrokerConfig
from kafkalite_server.replication.replica_manager import READ_COMMITTED
from kafkalite_server.share.manager import GroupSettings
from kafkalite_server.share.partition import ShareLimits

AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
RESETS = ("latest", "earliest")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


@dataclass(frozen=True)
class GroupConfigKey:
    name: str
    default: str
    doc: str


class ShareGroupConfigs:
    """What the group configs set for a share group mean for it; the configs themselves
    are kept by the group's coordinator (:meth:`~.group.ShareGroups.configs`)."""

    def __init__(self, broker: BrokerConfig, limits: ShareLimits) -> None:
        self._limits = limits
        self._lock_bounds = (broker.group_share_min_record_lock_duration_ms,
                             broker.group_share_max_record_lock_duration_ms)
        self.keys = {key.name: key for key in (
            GroupConfigKey(AUTO_OFFSET_RESET, "latest",
                           "Where a share group starts reading a partition it has not read."),
            GroupConfigKey(ISOLATION_LEVEL, "read_uncommitted",
                           "Whether records of transactions are read before they commit."),
            GroupConfigKey(RECORD_LOCK_DURATION_MS, str(limits.lock_duration_ms),
                           "How long a member holds an acquired record."),
        )}

    def effective(self, overrides: Mapping[str, str]) -> dict[str, str]:
        """Every key's value for a group with ``overrides`` set (defaults for the rest)."""
        return {name: overrides.get(name, key.default) for name, key in self.keys.items()}

    def validate(self, configs: Mapping[str, str]) -> None:
        """ConfigError naming the first key that is unknown or has a value it cannot take."""
        for name, value in configs.items():
            self._validate(name, value)

    def _validate(self, name: str, value: str) -> None:
        if name not in self.keys:
            raise ConfigError(name, "not a share group config (kafkalite knows "
                                    f"{', '.join(sorted(self.keys))})")
        if name == AUTO_OFFSET_RESET and value not in RESETS:
            raise ConfigError(name, f"{value!r} is not one of {', '.join(RESETS)}")
        if name == ISOLATION_LEVEL and value not in ISOLATION_LEVELS:
            raise ConfigError(name, f"{value!r} is not one of {', '.join(ISOLATION_LEVELS)}")
        if name == RECORD_LOCK_DURATION_MS:
            low, high = self._lock_bounds
            if not value.isdigit() or not low <= int(value) <= high:
                raise ConfigError(name, f"{value!r} is not a duration between {low} and "
                                        f"{high} ms (group.share.min/max.record.lock.duration.ms)")

    def entries(self, overrides: Mapping[str, str]) -> list[dict[str, Any]]:
        """DescribeConfigs' entries for a group with ``overrides`` set."""
        entries = []
        for name, key in self.keys.items():
            source = ConfigSource.DYNAMIC_GROUP_CONFIG if name in overrides \
                else ConfigSource.DEFAULT_CONFIG
            value = overrides.get(name, key.default)
            kind = ConfigType.INT if name == RECORD_LOCK_DURATION_MS else ConfigType.STRING
            entries.append({"name": name, "value": value, "read_only": False,
                            "is_default": source == ConfigSource.DEFAULT_CONFIG,
                            "config_source": int(source), "is_sensitive": False,
                            "synonyms": [{"name": name, "value": value, "source": int(source)}],
                            "config_type": int(kind), "documentation": key.doc})
        return entries

    def settings(self, overrides: Mapping[str, str]) -> GroupSettings:
        configs = self.effective(overrides)
        limits = replace(self._limits, lock_duration_ms=int(configs[RECORD_LOCK_DURATION_MS]))
        isolation = READ_COMMITTED if configs[ISOLATION_LEVEL] == "read_committed" else 0
        return GroupSettings(limits, isolation)
