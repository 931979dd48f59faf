"""High watermark and ISR rules of the leader, with a fake clock, plus the worked example
of two replicas moving their LEO and HW over two fetch rounds."""

from __future__ import annotations

from kafkalite_server.replication.replica_state import (
    UNKNOWN_OFFSET,
    ReplicaSet,
    follower_high_watermark,
)

LEADER, FOLLOWER = 1, 2
LAG_MS = 30_000


def leader_set(isr: tuple[int, ...] = (LEADER, FOLLOWER), now: int = 0) -> ReplicaSet:
    replicas = ReplicaSet(LEADER, lag_time_max_ms=LAG_MS, high_watermark=0)
    replicas.become_leader((LEADER, FOLLOWER), isr, now)
    return replicas


def test_worked_example_two_fetch_rounds() -> None:
    """One partition, two replicas, both logs empty; a producer writes one message."""
    leader = leader_set()
    leader_leo, follower_leo, follower_hw = 0, 0, 0

    # The producer's message: leader LEO 1; no fetch yet, so the remote LEO is unknown
    # and the HW stays 0.
    leader_leo = 1
    assert not leader.maybe_increment_high_watermark(leader_leo)
    assert leader.remotes[FOLLOWER].log_end_offset == UNKNOWN_OFFSET
    assert leader.high_watermark == 0

    # First fetch, leader side: the follower asks for offset 0, so its remote LEO is 0;
    # HW = min(leader LEO 1, remote LEO 0) = 0, sent with the message.
    leader.update_follower(FOLLOWER, fetch_offset=follower_leo, leader_leo=leader_leo,
                           now_ms=10)
    leader.maybe_increment_high_watermark(leader_leo)
    assert (leader_leo, leader.remotes[FOLLOWER].log_end_offset, leader.high_watermark) == \
        (1, 0, 0)
    # Follower side: it writes the message (LEO 1), HW = min(leader HW 0, LEO 1) = 0.
    follower_leo = 1
    follower_hw = follower_high_watermark(leader.high_watermark, follower_leo)
    assert (follower_leo, follower_hw) == (1, 0)

    # Second fetch, leader side: offset 1 asked, remote LEO 1, HW = min(1, 1) = 1.
    leader.update_follower(FOLLOWER, fetch_offset=follower_leo, leader_leo=leader_leo,
                           now_ms=20)
    assert leader.maybe_increment_high_watermark(leader_leo)
    assert (leader_leo, leader.remotes[FOLLOWER].log_end_offset, leader.high_watermark) == \
        (1, 1, 1)
    # Follower side: nothing new to write (LEO 1), HW = min(leader HW 1, LEO 1) = 1.
    follower_hw = follower_high_watermark(leader.high_watermark, follower_leo)
    assert (follower_leo, follower_hw) == (1, 1)


def test_high_watermark_never_moves_back() -> None:
    replicas = leader_set()
    replicas.update_follower(FOLLOWER, 5, 5, now_ms=0)
    assert replicas.maybe_increment_high_watermark(5)
    replicas.update_follower(FOLLOWER, 3, 5, now_ms=1)  # a truncated follower
    assert not replicas.maybe_increment_high_watermark(5)
    assert replicas.high_watermark == 5


def test_leader_alone_in_isr_advances_to_its_leo() -> None:
    replicas = leader_set(isr=(LEADER,))
    assert replicas.maybe_increment_high_watermark(7)
    assert replicas.high_watermark == 7


def test_follower_outside_isr_does_not_hold_the_high_watermark() -> None:
    replicas = leader_set(isr=(LEADER,))
    replicas.update_follower(FOLLOWER, 2, 10, now_ms=0)
    replicas.maybe_increment_high_watermark(10)
    assert replicas.high_watermark == 10


def test_stuck_follower_leaves_isr_after_lag_time() -> None:
    replicas = leader_set(now=1000)
    assert replicas.out_of_sync(leader_leo=5, now_ms=1000 + LAG_MS) == ()
    assert replicas.out_of_sync(leader_leo=5, now_ms=1001 + LAG_MS) == (FOLLOWER,)


def test_caught_up_follower_never_out_of_sync() -> None:
    replicas = leader_set(now=0)
    replicas.update_follower(FOLLOWER, 5, 5, now_ms=100)
    assert replicas.out_of_sync(leader_leo=5, now_ms=10 * LAG_MS) == ()


def test_slow_follower_that_never_reaches_the_leo_leaves() -> None:
    replicas = leader_set(now=0)
    leo = 0
    for step in range(1, 40):
        now = step * 1000
        leo += 10  # the leader grows faster than the follower reads
        replicas.update_follower(FOLLOWER, leo - 15, leo, now_ms=now)
    assert replicas.out_of_sync(leader_leo=leo, now_ms=39_000) == (FOLLOWER,)


def test_trickle_follower_stays_caught_up_by_previous_fetch_rule() -> None:
    """Each fetch reaches the LEO the leader had at the follower's previous fetch."""
    replicas = leader_set(now=0)
    leo = 1
    replicas.update_follower(FOLLOWER, 0, leo, now_ms=0)
    for step in range(1, 100):
        now = step * 1000
        fetch_offset = leo  # all it was sent last time
        leo += 1  # a produce arrived in between
        replicas.update_follower(FOLLOWER, fetch_offset, leo, now_ms=now)
    assert replicas.remotes[FOLLOWER].last_caught_up_ms == 98_000
    assert replicas.out_of_sync(leader_leo=leo, now_ms=99_000) == ()


def test_expand_needs_high_watermark_and_epoch_start() -> None:
    replicas = leader_set(isr=(LEADER,))
    replicas.maybe_increment_high_watermark(10)
    replicas.update_follower(FOLLOWER, 9, 10, now_ms=0)
    assert not replicas.ready_to_join(FOLLOWER, epoch_start_offset=0)
    replicas.update_follower(FOLLOWER, 10, 12, now_ms=1)
    assert replicas.ready_to_join(FOLLOWER, epoch_start_offset=10)
    assert not replicas.ready_to_join(FOLLOWER, epoch_start_offset=11)


def test_fetch_from_non_replica_is_ignored() -> None:
    replicas = leader_set()
    assert not replicas.update_follower(9, 3, 3, now_ms=0)
