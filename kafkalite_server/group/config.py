"""Group coordinator settings, under Kafka's broker config names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from kafkalite.errors import ConfigError

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    """The knobs of the classic group protocol and of the offsets topic (Kafka defaults)."""

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3000
    offsets_topic_num_partitions: int = 50
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offset_metadata_max_bytes: int = 4096

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> GroupCoordinatorConfig:
        """Pick this class's keys (``group.min.session.timeout.ms`` style) out of a broker config."""
        values: dict[str, int] = {}
        for field in fields(cls):
            key = field.name.replace("_", ".")
            if key not in properties:
                continue
            raw = properties[key]
            try:
                values[field.name] = int(str(raw))
            except ValueError:
                raise ConfigError(key, f"expected an integer, got {raw!r}") from None
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        """Reject settings the coordinator cannot run with, naming the key."""
        if self.offsets_topic_num_partitions < 1:
            raise ConfigError("offsets.topic.num.partitions", "must be at least 1")
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ConfigError(
                "group.min.session.timeout.ms", "must not exceed group.max.session.timeout.ms"
            )
        if self.group_initial_rebalance_delay_ms < 0:
            raise ConfigError("group.initial.rebalance.delay.ms", "must not be negative")
        if self.offset_metadata_max_bytes < 0:
            raise ConfigError("offset.metadata.max.bytes", "must not be negative")
