"""Transaction coordinator settings, under Kafka's broker config names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalite_server.cluster.internal_topics import TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from kafkalite_server.config import BrokerConfig

__all__ = ["TRANSACTION_STATE_TOPIC", "TxnConfig"]


@dataclass(frozen=True)
class TxnConfig:
    num_partitions: int = 50
    replication_factor: int = 3
    min_isr: int = 2
    segment_bytes: int = 100 * 1024 * 1024
    max_timeout_ms: int = 900_000
    abort_check_interval_ms: int = 10_000
    id_expiration_ms: int = 7 * 24 * 3_600_000
    expiration_check_interval_ms: int = 3_600_000
    partition_verification: bool = True

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> TxnConfig:
        def get(name: str) -> int:
            return int(getattr(config, name))
        return cls(
            num_partitions=get("transaction_state_log_num_partitions"),
            replication_factor=get("transaction_state_log_replication_factor"),
            min_isr=get("transaction_state_log_min_isr"),
            segment_bytes=get("transaction_state_log_segment_bytes"),
            max_timeout_ms=get("transaction_max_timeout_ms"),
            abort_check_interval_ms=get(
                "transaction_abort_timed_out_transaction_cleanup_interval_ms"),
            id_expiration_ms=get("transactional_id_expiration_ms"),
            expiration_check_interval_ms=get(
                "transaction_remove_expired_transaction_cleanup_interval_ms"),
            partition_verification=config.transaction_partition_verification_enable,
        )
