"""One partition replica on this broker: its log, the controller's view of it (leader,
leader epoch, replicas, ISR) and its high watermark.

Followers do not fetch yet, so the leader still advances the high watermark to its log end
offset as soon as an append is written (what an ISR of the leader alone means); keeping the
HW apart from the LEO keeps reads honest and gives the replica fetchers a place to plug in.
"""

from __future__ import annotations

from kafkalite.protocol.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from kafkalite_server.cluster.messages import PartitionState
from kafkalite_server.log.log import AppendInfo, Log

NO_EPOCH = -1


class Partition:
    def __init__(self, local_id: int, state: PartitionState, log: Log) -> None:
        self.local_id = local_id
        self.topic = state.topic
        self.index = state.partition
        self.log = log
        self.leader_id = -1
        self.leader_epoch = NO_EPOCH
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.zk_version = 0
        self.high_watermark = log.log_end_offset
        self.apply(state)

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    def apply(self, state: PartitionState) -> bool:
        """Takes the controller's state; True if this replica just became the leader. A new
        leader epoch starts at the log end offset in the epoch cache (KIP-279)."""
        was_leader = self.is_leader
        self.leader_id = state.leader
        self.isr = state.isr
        self.replicas = state.replicas
        self.zk_version = state.zk_version
        if self.is_leader and state.leader_epoch > self.leader_epoch:
            self.log.leader_epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
            self.high_watermark = max(self.high_watermark, self.log.log_end_offset)
        self.leader_epoch = max(self.leader_epoch, state.leader_epoch)
        return self.is_leader and not was_leader

    def append_records_to_leader(self, records: memoryview, *, acks: int,
                                 api_version: int, coordinator: bool = False) -> AppendInfo:
        """min.insync.replicas is checked before anything is written (NOT_ENOUGH_REPLICAS)."""
        if not self.is_leader:
            raise NotLeaderOrFollowerError(f"{self.topic}-{self.index} is led by broker "
                                           f"{self.leader_id}, not {self.local_id}")
        min_isr = self.log.config.min_insync_replicas
        if acks == -1 and len(self.isr) < min_isr:
            raise NotEnoughReplicasError(
                f"ISR has {len(self.isr)} replica(s), min.insync.replicas is {min_isr}")
        info = self.log.append_as_leader(records, leader_epoch=self.leader_epoch,
                                         api_version=api_version, coordinator=coordinator)
        self._maybe_increment_high_watermark()
        return info

    def advance_high_watermark(self) -> None:
        """After an append made outside :meth:`append_records_to_leader` (a marker)."""
        self._maybe_increment_high_watermark()

    def _maybe_increment_high_watermark(self) -> None:
        """Until followers fetch, every appended offset counts as replicated at once."""
        self.high_watermark = self.log.log_end_offset

    def enough_replicas_after_append(self) -> bool:
        """False when the ISR shrank below min.insync.replicas while a produce waited."""
        return len(self.isr) >= self.log.config.min_insync_replicas

    def check_leader_epoch(self, requested: int) -> None:
        """KIP-320 fencing: an older epoch is fenced, a newer one is not known yet."""
        if requested == NO_EPOCH or requested == self.leader_epoch:
            return
        if requested < self.leader_epoch:
            raise FencedLeaderEpochError(f"{self.topic}-{self.index} epoch {requested} "
                                         f"< current {self.leader_epoch}")
        raise UnknownLeaderEpochError(f"{self.topic}-{self.index} epoch {requested} "
                                      f"> current {self.leader_epoch}")
