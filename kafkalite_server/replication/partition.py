"""One partition replica on this broker: its log, the controller's view of it (leader,
leader epoch, replicas, ISR), its high watermark, and as leader its followers' progress.

As leader it learns each follower's LEO from its fetches (:meth:`update_follower_fetch`),
moves the high watermark to the smallest LEO of the ISR (the rules live in
:mod:`replica_state`), and changes the ISR through the partition state store with a
version check. As follower it appends the leader's batches unchanged and sets its high
watermark to min(leader's HW, own LEO). The high watermark is held as
:class:`LogOffsetMetadata` so delayed fetches measure bytes below it without reading.

ISR changes follow Kafka's AlterPartition design (KIP-497). A change is *proposed*
(:class:`PendingIsr`) and handed to an :class:`IsrWriter`, which writes it off the event
loop and reports the :data:`IsrOutcome` to :meth:`Partition.complete_isr_change`. While one
is pending no other starts, ``isr`` stays the committed ISR (min.insync.replicas counts
it), and the high watermark counts the *maximal* ISR (committed and proposed together): a
follower being added counts at once, one being removed counts until the removal is
committed, so the high watermark never passes what the ISR on record holds. The
transitions are the table below; the partition never waits for the store.

=================  ===================================================================
outcome            what the partition does
=================  ===================================================================
IsrCommitted       the proposed ISR is the ISR, at the store's new version
IsrConflict        the state moved on: take its ISR if this broker still leads in the
                   same epoch (the next check decides again), else wait for LeaderAndIsr
IsrFailed          drop the proposal; the next fetch or check proposes again
LeaderAndIsr       the controller's state replaces the ISR; a late outcome is ignored
=================  ===================================================================
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kafkalite.protocol.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from kafkalite_server.cluster.messages import PartitionState
from kafkalite_server.log.log import AppendInfo, Log
from kafkalite_server.replication.isr_store import IsrState
from kafkalite_server.replication.replica_state import ReplicaSet, follower_high_watermark

log = logging.getLogger(__name__)

NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class PendingIsr:
    """An ISR change on its way to the store (Kafka's PendingExpandIsr/PendingShrinkIsr)."""

    state: IsrState
    """What is written: this leader, its epoch, the proposed ISR."""
    version: int
    """The store version the write is conditional on."""
    maximal: tuple[int, ...]
    """Committed and proposed ISR together: what the high watermark counts meanwhile."""


@dataclass(frozen=True, slots=True)
class IsrCommitted:
    version: int


@dataclass(frozen=True, slots=True)
class IsrConflict:
    """The version check failed; the state as it is now."""

    state: IsrState
    version: int


@dataclass(frozen=True, slots=True)
class IsrFailed:
    reason: str


IsrOutcome = IsrCommitted | IsrConflict | IsrFailed


class IsrWriter(Protocol):
    def submit(self, partition: Partition, pending: PendingIsr) -> None:
        """Writes ``pending`` off the event loop, then calls
        ``partition.complete_isr_change(pending, outcome)`` on it."""


class NoIsrWriter:
    """For partitions whose ISR never changes (one replica)."""

    def submit(self, partition: Partition, pending: PendingIsr) -> None:
        partition.complete_isr_change(pending, IsrFailed("this broker writes no ISR changes"))


class Partition:
    def __init__(self, local_id: int, state: PartitionState, log_: Log, *,
                 isr_writer: IsrWriter, lag_time_max_ms: int,
                 now_ms: Callable[[], int], broker_alive: Callable[[int], bool],
                 high_watermark: int = 0) -> None:
        """``high_watermark`` is the checkpointed one (capped at the log end).
        ``broker_alive(id)`` says whether a broker is registered, as this broker's metadata
        cache last heard from the controller: only a live broker may join the ISR."""
        self.local_id = local_id
        self.topic = state.topic
        self.index = state.partition
        self.log = log_
        self.isr_writer = isr_writer
        self.now_ms = now_ms
        self.broker_alive = broker_alive
        self.leader_id = -1
        self.leader_epoch = NO_EPOCH
        self.leader_epoch_start_offset = 0
        self.controller_epoch = -1
        self.isr: tuple[int, ...] = ()
        """The committed ISR (as the store has it)."""
        self.pending_isr: PendingIsr | None = None
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
        self.pending_isr = None  # the controller's word supersedes a proposal in flight
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

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR the high watermark counts: with a change pending, committed and
        proposed members together."""
        return self.pending_isr.maximal if self.pending_isr is not None else self.isr

    def update_follower_fetch(self, follower_id: int, fetch_offset: int) -> bool:
        """A follower fetched from ``fetch_offset`` (its LEO): track it, propose it back
        into the ISR once it reached the HW, and move the HW. True if the HW moved."""
        now = self.now_ms()
        if not self.followers.update_follower(follower_id, fetch_offset,
                                              self.log.log_end_offset, now):
            return False
        # A broker that left (or is leaving: its fetchers outlive its registration for
        # a moment) must not rejoin, or acks=all waits for it until the ISR shrinks again.
        if (follower_id not in self.maximal_isr
                and self.followers.ready_to_join(follower_id, self.leader_epoch_start_offset)
                and self.broker_alive(follower_id)):
            self._propose((*self.isr, follower_id))
        return self.maybe_increment_high_watermark()

    def maybe_shrink_isr(self) -> bool:
        """Proposes dropping followers out of sync for ``replica.lag.time.max.ms``; True if
        it did (the ISR changes once the store has it)."""
        if self.pending_isr is not None:
            return False
        lagging = self.followers.out_of_sync(self.log.log_end_offset, self.now_ms())
        if not lagging:
            return False
        log.info("%s-%d: shrinking ISR %s, %s fell behind", self.topic, self.index, self.isr,
                 lagging)
        return self._propose(tuple(b for b in self.isr if b not in lagging))

    def _propose(self, new_isr: tuple[int, ...]) -> bool:
        """Starts an ISR change unless one is pending (or it changes nothing)."""
        if self.pending_isr is not None or not new_isr or new_isr == self.isr:
            return False
        maximal = (*self.isr, *(b for b in new_isr if b not in self.isr))
        self.pending_isr = PendingIsr(
            IsrState(self.local_id, self.leader_epoch, new_isr, self.controller_epoch),
            self.zk_version, maximal)
        self.followers.update_assignment(self.replicas, maximal)
        self.isr_writer.submit(self, self.pending_isr)
        return True

    def complete_isr_change(self, pending: PendingIsr, outcome: IsrOutcome) -> bool:
        """The store's answer to ``pending`` (ignored if a LeaderAndIsr came meanwhile);
        True if the ISR or the high watermark changed."""
        if pending is not self.pending_isr:
            return False
        self.pending_isr = None
        before = self.isr
        if isinstance(outcome, IsrCommitted):
            log.info("%s-%d: ISR %s -> %s", self.topic, self.index, self.isr,
                     pending.state.isr)
            self.isr, self.zk_version = pending.state.isr, outcome.version
        elif isinstance(outcome, IsrConflict):
            fresh = outcome.state
            if fresh.leader == self.local_id and fresh.leader_epoch == self.leader_epoch:
                self.isr, self.zk_version = fresh.isr, outcome.version
            else:
                log.info("%s-%d: the partition state moved on (leader %d, epoch %d)",
                         self.topic, self.index, fresh.leader, fresh.leader_epoch)
        else:
            log.warning("%s-%d: ISR change to %s not written: %s", self.topic, self.index,
                        pending.state.isr, outcome.reason)
        self.followers.update_assignment(self.replicas, self.isr)
        return self.maybe_increment_high_watermark() or self.isr != before

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
