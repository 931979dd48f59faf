"""Group coordinator settings, under Kafka's broker config names."""

from __future__ import annotations

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
    #: How long an Empty group's offsets outlive its last member (Kafka 2.1+: 7 days).
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600_000

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @classmethod
    def from_broker_config(cls, broker_config: object) -> GroupCoordinatorConfig:
        """Take the keys this class shares with the broker's config (same attribute names)."""
        values = {
            f.name: getattr(broker_config, f.name)
            for f in fields(cls)
            if getattr(broker_config, f.name, None) is not None
        }
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
        if self.offsets_retention_minutes < 1:
            raise ConfigError("offsets.retention.minutes", "must be at least 1")
        if self.offsets_retention_check_interval_ms < 1:
            raise ConfigError("offsets.retention.check.interval.ms", "must be at least 1")
