"""A modern group's own session timeout and heartbeat interval.

Kafka 4.0 lets one group set them on its GROUP config resource:
``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms`` for a consumer group
(KIP-848), ``share.session.timeout.ms`` and ``share.heartbeat.interval.ms`` for a share group
(KIP-932). A value set there overrides the broker's ``group.<type>.session.timeout.ms`` /
``group.<type>.heartbeat.interval.ms`` for that group only, and must lie within the broker's
``group.<type>.min/max.session.timeout.ms`` and ``group.<type>.min/max.heartbeat.interval.ms``
bounds. The heartbeat interval must stay below the session timeout, or a member could
never heartbeat in time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafkalite.errors import ConfigError
from kafkalite_server.config import BrokerConfig

CONSUMER_GROUP_TIMEOUTS = "consumer"
SHARE_GROUP_TIMEOUTS = "share"


@dataclass(frozen=True)
class GroupTimeouts:
    """One group type's timeout defaults and the bounds a group's own values must meet."""

    group_type: str
    """``consumer`` or ``share``: the prefix of the group config keys."""
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5000
    session_bounds: tuple[int, int] = (45_000, 60_000)
    heartbeat_bounds: tuple[int, int] = (5000, 15_000)

    @classmethod
    def of(cls, config: BrokerConfig, group_type: str) -> GroupTimeouts:
        """The broker's ``group.<group_type>.*`` timeout keys."""
        def key(name: str) -> int:
            value: int = getattr(config, f"group_{group_type}_{name}")
            return value

        return cls(group_type, key("session_timeout_ms"), key("heartbeat_interval_ms"),
                   (key("min_session_timeout_ms"), key("max_session_timeout_ms")),
                   (key("min_heartbeat_interval_ms"), key("max_heartbeat_interval_ms")))

    @property
    def session_key(self) -> str:
        return f"{self.group_type}.session.timeout.ms"

    @property
    def heartbeat_key(self) -> str:
        return f"{self.group_type}.heartbeat.interval.ms"

    def session_timeout_for(self, configs: Mapping[str, str]) -> int:
        """The session timeout of a group with ``configs`` set (validated when set)."""
        return int(configs.get(self.session_key, self.session_timeout_ms))

    def heartbeat_interval_for(self, configs: Mapping[str, str]) -> int:
        """The heartbeat interval members of a group with ``configs`` set are told."""
        return int(configs.get(self.heartbeat_key, self.heartbeat_interval_ms))

    def validate(self, configs: Mapping[str, str]) -> None:
        """ConfigError naming the key whose value a group may not take; ``configs`` are all
        the group's configs as they would be (keys of other kinds are ignored)."""
        for key, (low, high), bound in (
                (self.session_key, self.session_bounds, "session.timeout.ms"),
                (self.heartbeat_key, self.heartbeat_bounds, "heartbeat.interval.ms")):
            value = configs.get(key)
            if value is not None and not (value.isdigit() and low <= int(value) <= high):
                raise ConfigError(key, f"{value!r} is not between {low} and {high} ms "
                                       f"(group.{self.group_type}.min.{bound} and "
                                       f"group.{self.group_type}.max.{bound})")
        session, heartbeat = self.session_timeout_for(configs), self.heartbeat_interval_for(configs)
        if heartbeat >= session:
            raise ConfigError(self.heartbeat_key, f"{heartbeat} ms is not less than the "
                                                  f"session timeout, {session} ms")
