"""A leader's ISR changes over the partition state node (in-memory backend, fake clock):
shrink after replica.lag.time.max.ms, expand at the HW, a lost version check re-read and
decided again, a moved-on state never overwritten, and the controller notified."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite_server.cluster import zk_layout as zk
from kafkalite_server.cluster.memory_store import MemoryEnsemble
from kafkalite_server.cluster.messages import PartitionState
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.replication.isr_store import ZkPartitionStateStore
from kafkalite_server.replication.partition import Partition

LAG_MS = 10_000
PATH = zk.partition_state_path("t", 0)


LIVE_BROKERS = {1, 2, 3}


class Clock:
    now = 1_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def setup(tmp_path: Path):
    clock = Clock()
    session = MemoryEnsemble(clock).connect()
    session.create(PATH, zk.LeaderIsr(1, 5, (1, 2, 3), 1).encode(), makepath=True)
    log = Log.open(tmp_path / "t-0", LogConfig(), now_ms=clock)
    partition = Partition(1, PartitionState("t", 0, 1, 5, (1, 2, 3), (1, 2, 3), 0), log,
                          state_store=ZkPartitionStateStore(lambda: session),
                          lag_time_max_ms=LAG_MS, now_ms=clock,
                          broker_alive=LIVE_BROKERS.__contains__)
    partition.apply(PartitionState("t", 0, 1, 5, (1, 2, 3), (1, 2, 3), 0), 1)
    yield clock, session, partition
    log.close()


def _stored(session) -> zk.LeaderIsr:
    return zk.LeaderIsr.decode(PATH, session.get(PATH)[0])


def test_shrink_after_lag_time_writes_the_state_node_and_notifies(setup):
    clock, session, partition = setup
    partition.update_follower_fetch(2, 0)
    clock.now += LAG_MS
    assert not partition.maybe_shrink_isr()
    clock.now += 1
    partition.update_follower_fetch(2, 0)  # caught up (LEO 0): stays
    assert partition.maybe_shrink_isr()
    assert partition.isr == (1, 2) and _stored(session).isr == (1, 2)
    assert _stored(session).leader_epoch == 5  # an ISR change keeps the leader epoch
    assert session.children(zk.ISR_CHANGE_NOTIFICATION)


def test_a_lost_version_check_is_decided_again_from_fresh_state(setup):
    clock, session, partition = setup
    # Someone else (the controller) removed 2 meanwhile: version 1, ISR (1, 3).
    session.set(PATH, zk.LeaderIsr(1, 5, (1, 3), 1).encode(), 0)
    clock.now += LAG_MS + 1
    assert partition.maybe_shrink_isr()
    assert _stored(session).isr == (1,)
    assert partition.isr == (1,)
    assert session.get(PATH)[1].version == 2


def test_a_state_moved_to_another_leader_is_never_overwritten(setup):
    clock, session, partition = setup
    session.set(PATH, zk.LeaderIsr(2, 6, (2, 3), 2).encode(), 0)
    clock.now += LAG_MS + 1
    assert not partition.maybe_shrink_isr()
    assert _stored(session) == zk.LeaderIsr(2, 6, (2, 3), 2)


def test_expand_when_the_follower_reaches_the_high_watermark(setup, make_batch):
    clock, session, partition = setup
    clock.now += LAG_MS + 1
    partition.maybe_shrink_isr()
    assert partition.isr == (1,)
    partition.append_records_to_leader(memoryview(bytearray(make_batch([b"a", b"b"]))),
                                       acks=1, api_version=8)
    assert partition.high_watermark == 2  # the ISR is the leader alone
    assert not partition.update_follower_fetch(3, 1)
    assert partition.isr == (1,)
    assert partition.update_follower_fetch(3, 2)
    assert partition.isr == (1, 3) and _stored(session).isr == (1, 3)


def test_a_broker_no_longer_registered_does_not_rejoin(setup, make_batch):
    """A stopping broker's fetcher can outlive its registration by a moment; taking it
    back into the ISR would hold every acks=all produce until the ISR shrank again."""
    clock, session, partition = setup
    clock.now += LAG_MS + 1
    partition.maybe_shrink_isr()
    partition.append_records_to_leader(memoryview(bytearray(make_batch([b"a"]))),
                                       acks=1, api_version=8)
    LIVE_BROKERS.discard(3)
    try:
        assert not partition.update_follower_fetch(3, 1)
        assert partition.isr == (1,) and _stored(session).isr == (1,)
    finally:
        LIVE_BROKERS.add(3)
    assert partition.update_follower_fetch(3, 1)
    assert partition.isr == (1, 3)
