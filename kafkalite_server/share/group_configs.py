"""Group configs (Kafka's GROUP config resource): what a group may set for itself, over the
broker's ``group.consumer.*`` and ``group.share.*`` defaults. They are kept by the group's
coordinator beside the share groups' state (:meth:`~.group.ShareGroups.configs`), whatever
the group's type, and a group may have them before it has members.

- ``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``: a consumer group's
  (KIP-848) own member session timeout and heartbeat interval, within the broker's
  ``group.consumer.min/max.*`` bounds (:mod:`kafkalite_server.group.group_timeouts`).
- ``share.session.timeout.ms``, ``share.heartbeat.interval.ms``: the same for a share group.
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
from kafkalite_server.group.group_timeouts import (
    CONSUMER_GROUP_TIMEOUTS,
    SHARE_GROUP_TIMEOUTS,
    GroupTimeouts,
)
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


class GroupConfigs:
    """The group config keys, their defaults and checks, and what they mean for a share
    group's partitions; the configs themselves are kept by the group's coordinator."""

    def __init__(self, broker: BrokerConfig, limits: ShareLimits) -> None:
        self._limits = limits
        self._lock_bounds = (broker.group_share_min_record_lock_duration_ms,
                             broker.group_share_max_record_lock_duration_ms)
        self._timeouts = tuple(GroupTimeouts.of(broker, group_type) for group_type in
                               (CONSUMER_GROUP_TIMEOUTS, SHARE_GROUP_TIMEOUTS))
        self._integer_keys = {RECORD_LOCK_DURATION_MS}
        timeout_keys = []
        for timeouts in self._timeouts:
            timeout_keys += [
                GroupConfigKey(timeouts.session_key, str(timeouts.session_timeout_ms),
                               f"How long a member of this {timeouts.group_type} group may go "
                               "without a heartbeat before it is removed."),
                GroupConfigKey(timeouts.heartbeat_key, str(timeouts.heartbeat_interval_ms),
                               f"How often members of this {timeouts.group_type} group are "
                               "told to heartbeat.")]
            self._integer_keys |= {timeouts.session_key, timeouts.heartbeat_key}
        self.keys = {key.name: key for key in (*timeout_keys,
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
        for timeouts in self._timeouts:
            timeouts.validate(configs)

    def _validate(self, name: str, value: str) -> None:
        if name not in self.keys:
            raise ConfigError(name, "not a group config (kafkalite knows "
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
            kind = ConfigType.INT if name in self._integer_keys else ConfigType.STRING
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
