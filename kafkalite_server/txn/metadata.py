"""What the coordinator knows about one transactional id (Kafka's TransactionMetadata)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalite_server.topic_partition import TopicPartition
from kafkalite_server.txn.log_records import TxnLogValue
from kafkalite_server.txn.state import TxnState


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_epoch: int = -1
    """The epoch before the last bump: an InitProducerId retry naming it gets the answer
    again (its first answer was lost)."""
    markers_pending: bool = False
    """Markers of a PrepareCommit/PrepareAbort are being written: no other change now."""

    def log_value(self) -> TxnLogValue:
        return TxnLogValue(self.producer_id, self.producer_epoch, self.timeout_ms, self.state,
                           frozenset(self.partitions), self.last_update_ms, self.start_ms)

    @classmethod
    def from_log(cls, transactional_id: str, value: TxnLogValue) -> TxnMetadata:
        return cls(transactional_id, value.producer_id, value.producer_epoch, value.timeout_ms,
                   value.state, set(value.partitions), value.start_ms, value.last_update_ms)
