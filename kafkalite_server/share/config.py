"""Share groups' broker settings (``group.share.*``, ``share.coordinator.*``: Kafka's names
and defaults), read once from the broker config."""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite_server.config import BrokerConfig
from kafkalite_server.group.group_timeouts import SHARE_GROUP_TIMEOUTS, GroupTimeouts
from kafkalite_server.share.partition import ShareLimits

SHARE_STATE_TOPIC = "__share_group_state"
"""The share coordinator's internal topic (Kafka's name)."""
SHARE_GROUP_TYPE = "share"
"""ListGroups' group_type of a share group."""
SIMPLE_ASSIGNOR = "simple"
"""The share assignor's name (ShareGroupDescribe's assignor_name)."""


@dataclass(frozen=True)
class ShareConfig:
    limits: ShareLimits
    timeouts: GroupTimeouts
    max_group_size: int
    max_share_sessions: int
    state_topic_partitions: int
    state_topic_replication_factor: int
    state_topic_min_isr: int
    state_topic_segment_bytes: int
    updates_per_snapshot: int
    write_timeout_ms: int

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> ShareConfig:
        return cls(
            limits=ShareLimits(
                lock_duration_ms=config.group_share_record_lock_duration_ms,
                delivery_count_limit=config.group_share_delivery_count_limit,
                max_record_locks=config.group_share_partition_max_record_locks),
            timeouts=GroupTimeouts.of(config, SHARE_GROUP_TIMEOUTS),
            max_group_size=config.group_share_max_size,
            max_share_sessions=config.group_share_max_share_sessions,
            state_topic_partitions=config.share_coordinator_state_topic_num_partitions,
            state_topic_replication_factor=(
                config.share_coordinator_state_topic_replication_factor),
            state_topic_min_isr=config.share_coordinator_state_topic_min_isr,
            state_topic_segment_bytes=config.share_coordinator_state_topic_segment_bytes,
            updates_per_snapshot=config.share_coordinator_snapshot_update_records_per_snapshot,
            write_timeout_ms=config.share_coordinator_write_timeout_ms,
        )
