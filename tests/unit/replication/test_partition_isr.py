"""A leader's ISR changes as Kafka's AlterPartition design (KIP-497), without I/O: a change
is proposed and stays pending until the store's outcome comes back; meanwhile the
committed ISR is unchanged, no second change starts, and the high watermark counts the
maximal ISR. Fake clock, and a writer that only records what it is asked to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite_server.cluster.messages import PartitionState
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.replication.isr_store import IsrState
from kafkalite_server.replication.partition import (
    IsrCommitted,
    IsrConflict,
    IsrFailed,
    Partition,
    PendingIsr,
)

LAG_MS = 10_000
LIVE_BROKERS = {1, 2, 3}


class Clock:
    now = 1_000_000

    def __call__(self) -> int:
        return self.now


class Recorded:
    """The partition's writer: keeps what it was asked to write."""

    def __init__(self) -> None:
        self.submitted: list[PendingIsr] = []

    def submit(self, partition: Partition, pending: PendingIsr) -> None:
        self.submitted.append(pending)


@pytest.fixture
def setup(tmp_path: Path):
    clock, writer = Clock(), Recorded()
    log = Log.open(tmp_path / "t-0", LogConfig(), now_ms=clock)
    state = PartitionState("t", 0, 1, 5, (1, 2, 3), (1, 2, 3), 7)
    partition = Partition(1, state, log, isr_writer=writer, lag_time_max_ms=LAG_MS,
                          now_ms=clock, broker_alive=LIVE_BROKERS.__contains__)
    partition.apply(state, 1)
    yield clock, writer, partition
    log.close()


def _append(partition: Partition, make_batch, values: list[bytes]) -> None:
    partition.append_records_to_leader(memoryview(bytearray(make_batch(values))), acks=1,
                                       api_version=8)


def test_a_shrink_is_pending_until_the_store_has_it(setup, make_batch):
    clock, writer, partition = setup
    _append(partition, make_batch, [b"a", b"b"])
    partition.update_follower_fetch(2, 2)
    clock.now += LAG_MS + 1
    partition.update_follower_fetch(2, 2)  # caught up: stays; 3 never fetched
    assert partition.maybe_shrink_isr()
    (pending,) = writer.submitted
    assert pending.state == IsrState(1, 5, (1, 2), 1) and pending.version == 7
    # Pending: the ISR on record still holds 3, and so does the high watermark.
    assert partition.isr == (1, 2, 3) and partition.pending_isr is pending
    assert partition.high_watermark == 0
    assert not partition.maybe_shrink_isr()  # one change at a time
    assert partition.complete_isr_change(pending, IsrCommitted(8))
    assert (partition.isr, partition.zk_version, partition.pending_isr) == ((1, 2), 8, None)
    assert partition.high_watermark == 2  # 3 no longer counts


def test_an_expansion_counts_the_follower_at_once(setup, make_batch):
    clock, writer, partition = setup
    clock.now += LAG_MS + 1
    partition.maybe_shrink_isr()
    partition.complete_isr_change(writer.submitted[-1], IsrCommitted(8))
    assert partition.isr == (1,)
    _append(partition, make_batch, [b"a", b"b"])
    assert partition.high_watermark == 2  # the ISR is the leader alone
    partition.update_follower_fetch(3, 2)  # reached the HW (2): proposed
    pending = writer.submitted[-1]
    assert pending.state.isr == (1, 3) and pending.maximal == (1, 3)
    assert partition.isr == (1,)
    _append(partition, make_batch, [b"c"])
    assert partition.high_watermark == 2  # 3 counts already: its LEO 2 holds the HW
    partition.update_follower_fetch(2, 3)  # not proposed while 3's change is pending
    assert writer.submitted[-1] is pending
    partition.complete_isr_change(pending, IsrCommitted(9))
    assert partition.isr == (1, 3)


def test_a_lost_version_check_takes_the_state_as_it_is_now(setup):
    clock, writer, partition = setup
    clock.now += LAG_MS + 1
    partition.maybe_shrink_isr()
    # The controller removed 2 meanwhile (version 8, ISR (1, 3)) in this leader's epoch.
    partition.complete_isr_change(writer.submitted[-1],
                                  IsrConflict(IsrState(1, 5, (1, 3), 1), 8))
    assert (partition.isr, partition.zk_version, partition.pending_isr) == ((1, 3), 8, None)
    assert partition.maybe_shrink_isr()  # decided again from the fresh state
    assert writer.submitted[-1].state.isr == (1,) and writer.submitted[-1].version == 8


def test_a_state_moved_to_another_leader_is_never_overwritten(setup):
    clock, writer, partition = setup
    clock.now += LAG_MS + 1
    partition.maybe_shrink_isr()
    partition.complete_isr_change(writer.submitted[-1],
                                  IsrConflict(IsrState(2, 6, (2, 3), 2), 8))
    assert partition.isr == (1, 2, 3) and partition.pending_isr is None
    assert partition.zk_version == 7  # the controller's LeaderAndIsr will tell


def test_a_failed_write_is_proposed_again_at_the_next_check(setup):
    clock, writer, partition = setup
    clock.now += LAG_MS + 1
    partition.maybe_shrink_isr()
    partition.complete_isr_change(writer.submitted[-1], IsrFailed("no ZooKeeper"))
    assert partition.isr == (1, 2, 3) and partition.pending_isr is None
    assert partition.maybe_shrink_isr()
    assert len(writer.submitted) == 2


def test_leader_and_isr_supersedes_a_pending_change(setup):
    clock, writer, partition = setup
    clock.now += LAG_MS + 1
    partition.maybe_shrink_isr()
    late = writer.submitted[-1]
    partition.apply(PartitionState("t", 0, 1, 6, (1, 2), (1, 2, 3), 9), 2)
    assert partition.pending_isr is None
    assert not partition.complete_isr_change(late, IsrCommitted(10))
    assert (partition.isr, partition.zk_version) == ((1, 2), 9)


def test_a_broker_no_longer_registered_does_not_rejoin(setup, make_batch):
    """A stopping broker's fetcher can outlive its registration by a moment; taking it
    back into the ISR would hold every acks=all produce until the ISR shrank again."""
    clock, writer, partition = setup
    clock.now += LAG_MS + 1
    partition.maybe_shrink_isr()
    partition.complete_isr_change(writer.submitted[-1], IsrCommitted(8))
    _append(partition, make_batch, [b"a"])
    LIVE_BROKERS.discard(3)
    try:
        partition.update_follower_fetch(3, 1)
        assert partition.pending_isr is None
    finally:
        LIVE_BROKERS.add(3)
    partition.update_follower_fetch(3, 1)
    assert writer.submitted[-1].state.isr == (1, 3)
