"""One partition replica on this broker: its log, the controller's view of it (leader,
leader epoch, replicas, ISR), its high watermark, and as leader its followers' progress.

As leader it learns each follower's LEO from its fetches (:meth:`update_follower_fetch`),
moves the high watermark to the smallest LEO of the ISR (the rules live in
:mod:`replica_state`), and changes the ISR through the partition state node with a version
check (:meth:`alter_isr`). As follower it appends the leader's batches unchanged and sets
its high watermark to min(leader's HW, own LEO). The high watermark is held as
:class:`LogOffsetMetadata` so delayed fetches measure bytes below it without reading.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafkalite.protocol.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from kafkalite_server.cluster import zk_layout as zk
from kafkalite_server.cluster.coordination import BadVersionError, CoordinationError
from kafkalite_server.cluster.messages import PartitionState
from kafkalite_server.log.log import AppendInfo, Log
from kafkalite_server.replication.isr_store import PartitionStateStore
from kafkalite_server.replication.replica_state import ReplicaSet, follower_high_watermark

log = logging.getLogger(__name__)

NO_EPOCH = -1
MAX_ISR_WRITE_ATTEMPTS = 5


class Partition:
    def __init__(self, local_id: int, state: PartitionState, log_: Log, *,
                 state_store: PartitionStateStore, lag_time_max_ms: int,
                 now_ms: Callable[[], int], broker_alive: Callable[[int], bool],
                 high_watermark: int = 0) -> None:
        """``high_watermark`` is the checkpointed one (capped at the log end).
        ``broker_alive(id)`` says whether a broker is registered, as this broker's metadata
        cache last heard from the controller: only a live broker may join the ISR."""
        self.local_id = local_id
        self.topic = state.topic
        self.index = state.partition
        self.log = log_
        self.state_store = state_store
        self.now_ms = now_ms
        self.broker_alive = broker_alive
        self.leader_id = -1
        self.leader_epoch = NO_EPOCH
        self.leader_epoch_start_offset = 0
        self.controller_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.zk_version = 0
        start = max(min(high_watermark, log_.log_end_offset), log_.log_start_offset)
        self.followers = ReplicaSet(local_id, lag_time_max_ms=lag_time_max_ms,
                                    high_watermark=start)
        self.high_watermark_metadata = log_.offset_metadata(start)
        self.leader_high_watermark = start
        """As a follower: the leader's HW in its last fetch response."""

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    @property
    def high_watermark(self) -> int:
        return self.high_watermark_metadata.offset

    @property
    def offset_lag(self) -> int:
        """How far this replica's log is behind the leader's committed offset, as last
        heard from the leader (0 on the leader): DescribeLogDirs' ``offset_lag``."""
        if self.is_leader:
            return 0
        return max(self.leader_high_watermark - self.log.log_end_offset, 0)

    def _set_high_watermark(self, offset: int) -> None:
        self.followers.high_watermark = offset
        if offset != self.high_watermark_metadata.offset:
            self.high_watermark_metadata = self.log.offset_metadata(offset)

    # ------------------------------------------------------------------ controller's word

    def apply(self, state: PartitionState, controller_epoch: int) -> bool:
        """Takes the controller's state; True if this replica became the leader or started
        a new leader epoch (its followers start over). A new epoch starts at the log end
        offset in the epoch cache (KIP-279)."""
        new_epoch = state.leader_epoch > self.leader_epoch
        was_leader = self.is_leader
        self.leader_id = state.leader
        self.leader_epoch = max(self.leader_epoch, state.leader_epoch)
        self.controller_epoch = controller_epoch
        self.isr = state.isr
        self.replicas = state.replicas
        self.zk_version = state.zk_version
        if not self.is_leader:
            return False
        if new_epoch:
            self.leader_epoch_start_offset = self.log.log_end_offset
            self.log.leader_epoch_cache.assign(self.leader_epoch, self.log.log_end_offset)
        if new_epoch or not was_leader:
            self.followers.become_leader(self.replicas, self.isr, self.now_ms())
        else:
            self.followers.update_assignment(self.replicas, self.isr)
        self.maybe_increment_high_watermark()
        return new_epoch or not was_leader

    # ------------------------------------------------------------------ leader

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
        self.maybe_increment_high_watermark()
        return info

    def advance_high_watermark(self) -> None:
        """After an append made outside :meth:`append_records_to_leader` (a marker)."""
        self.maybe_increment_high_watermark()

    def maybe_increment_high_watermark(self) -> bool:
        """Min LEO over the ISR; True if the high watermark moved forward. The HW still
        moves with the ISR below min.insync.replicas (Kafka before KIP-966): acks=all
        produces then fail with NOT_ENOUGH_REPLICAS_AFTER_APPEND, acks=1 data commits."""
        if not self.followers.maybe_increment_high_watermark(self.log.log_end_offset):
            return False
        self.high_watermark_metadata = self.log.offset_metadata(self.followers.high_watermark)
        return True

    def update_follower_fetch(self, follower_id: int, fetch_offset: int) -> bool:
        """A follower fetched from ``fetch_offset`` (its LEO): track it, let it rejoin the
        ISR once it reached the HW, and move the HW. True if the HW or the ISR changed."""
        now = self.now_ms()
        if not self.followers.update_follower(follower_id, fetch_offset,
                                              self.log.log_end_offset, now):
            return False
        changed = False
        # A broker that left (or is leaving: its fetchers outlive its registration for
        # a moment) must not rejoin, or acks=all waits for it until the ISR shrinks again.
        if (self.followers.ready_to_join(follower_id, self.leader_epoch_start_offset)
                and self.broker_alive(follower_id)):
            changed = self.alter_isr(
                lambda isr: None if follower_id in isr else (*isr, follower_id))
        return self.maybe_increment_high_watermark() or changed

    def maybe_shrink_isr(self) -> bool:
        """Drops followers out of sync for ``replica.lag.time.max.ms``; True if it did."""
        lagging = self.followers.out_of_sync(self.log.log_end_offset, self.now_ms())
        if not lagging:
            return False
        log.info("%s-%d: shrinking ISR %s, %s fell behind", self.topic, self.index, self.isr,
                 lagging)
        if not self.alter_isr(lambda isr: tuple(b for b in isr if b not in lagging)):
            return False
        self.maybe_increment_high_watermark()
        return True

    def alter_isr(self, decide: Callable[[tuple[int, ...]], tuple[int, ...] | None]) -> bool:
        """Writes ``decide(current ISR)`` to the partition state node, conditionally on its
        version. A lost check re-reads the node and decides again from the fresh ISR, as
        long as this broker still leads in the same epoch; otherwise the controller's next
        LeaderAndIsr tells what happened."""
        for _attempt in range(MAX_ISR_WRITE_ATTEMPTS):
            new_isr = decide(self.isr)
            if new_isr is None or new_isr == self.isr or not new_isr:
                return False
            state = zk.LeaderIsr(self.local_id, self.leader_epoch, new_isr,
                                 self.controller_epoch)
            try:
                self.zk_version = self.state_store.write(self.key, state, self.zk_version)
            except BadVersionError:
                if not self._reload_state():
                    return False
                continue
            except CoordinationError as exc:
                log.warning("%s-%d: ISR change to %s not written: %s", self.topic, self.index,
                            new_isr, exc)
                return False
            log.info("%s-%d: ISR %s -> %s", self.topic, self.index, self.isr, new_isr)
            self.isr = new_isr
            self.followers.update_assignment(self.replicas, new_isr)
            return True
        return False

    def _reload_state(self) -> bool:
        try:
            fresh, version = self.state_store.read(self.key)
        except CoordinationError as exc:
            log.warning("%s-%d: cannot re-read the partition state: %s", self.topic,
                        self.index, exc)
            return False
        if fresh.leader != self.local_id or fresh.leader_epoch != self.leader_epoch:
            log.info("%s-%d: the partition state moved on (leader %d, epoch %d)", self.topic,
                     self.index, fresh.leader, fresh.leader_epoch)
            return False
        self.isr, self.zk_version = fresh.isr, version
        self.followers.update_assignment(self.replicas, fresh.isr)
        return True

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

    # ------------------------------------------------------------------ follower

    def append_as_follower(self, records: memoryview, leader_high_watermark: int,
                           leader_log_start_offset: int) -> AppendInfo | None:
        """The leader's batches, byte for byte; then HW = min(leader HW, own LEO)."""
        info = self.log.append_as_follower(records) if len(records) else None
        self.leader_high_watermark = leader_high_watermark
        if leader_log_start_offset > self.log.log_start_offset:
            self.log.maybe_increment_log_start_offset(
                min(leader_log_start_offset, self.log.log_end_offset))
        hw = follower_high_watermark(leader_high_watermark, self.log.log_end_offset)
        if hw > self.high_watermark:
            self._set_high_watermark(hw)
        return info

    def truncate_to(self, offset: int) -> None:
        """Follower truncation; the HW never stays above the new log end."""
        self.log.truncate_to(offset)
        if self.high_watermark > self.log.log_end_offset:
            self._set_high_watermark(self.log.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.log.truncate_fully_and_start_at(offset)
        self._set_high_watermark(offset)
