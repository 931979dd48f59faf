"""IdleTimer: idle time counts only while a member holds an assignment (a fake clock)."""

from __future__ import annotations

import pytest

from kafkalite.idle import IdleTimer
from kafkalite.structs import TopicPartition

TP = TopicPartition("t", 0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_wait_for_an_assignment_is_not_idle_time() -> None:
    clock = FakeClock()
    timer = IdleTimer(1500, clock=clock)
    clock.now += 3.2  # the broker's initial rebalance delay, and more
    assert not timer.expired()
    timer.on_partitions_assigned({TP})
    clock.now += 1.4
    assert not timer.expired()
    clock.now += 0.1
    assert timer.expired()


def test_records_restart_the_clock_and_a_rebalance_pauses_it() -> None:
    clock = FakeClock()
    timer = IdleTimer(1000, clock=clock)
    timer.start()
    clock.now += 0.9
    timer.record_activity()
    clock.now += 0.9
    assert not timer.expired()
    timer.on_partitions_revoked({TP})
    clock.now += 5
    assert not timer.expired() and not timer.assigned
    timer.on_partitions_assigned(set())  # an empty assignment is an assignment too
    clock.now += 1
    assert timer.expired()


def test_a_join_that_never_completes_is_bounded() -> None:
    clock = FakeClock()
    timer = IdleTimer(1000, join_allowance_ms=20_000, clock=clock)
    clock.now += 19.9
    assert not timer.expired()
    clock.now += 0.1
    assert timer.expired()


def test_the_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout_ms"):
        IdleTimer(0)
