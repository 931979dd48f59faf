"""Heartbeat, session and poll-interval timers on a fake clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalite.consumer.heartbeat import Action, HeartbeatTimers

if TYPE_CHECKING:
    from fake_clock import FakeClock


def timers(clock: FakeClock) -> HeartbeatTimers:
    t = HeartbeatTimers(heartbeat_interval_ms=3000, session_timeout_ms=10000,
                        max_poll_interval_ms=60000, clock=clock)
    t.joined()
    return t


def test_first_heartbeat_one_interval_after_joining_then_one_at_a_time(clock: FakeClock) -> None:
    t = timers(clock)
    due = t.due()
    assert due.action is Action.WAIT and due.wake_at == clock.now + 3
    clock.advance(3)
    due = t.due()
    assert due.action is Action.SEND and due.wake_at == clock.now + 3
    clock.advance(5)  # still in flight: never two at once
    assert t.due().action is Action.WAIT
    t.answered(ok=True)
    assert t.due().action is Action.SEND


def test_no_successful_heartbeat_within_the_session_loses_the_coordinator(clock: FakeClock) -> None:
    t = timers(clock)
    for _ in range(3):
        clock.advance(3)
        assert t.due().action is Action.SEND
        t.answered(ok=False)
    clock.advance(1.5)
    assert t.due().action is Action.COORDINATOR_LOST
    t.joined()
    assert t.due().action is Action.WAIT


def test_successful_heartbeats_keep_the_session(clock: FakeClock) -> None:
    t = timers(clock)
    for _ in range(10):
        clock.advance(3)
        t.polled()
        assert t.due().action is Action.SEND
        t.answered(ok=True)
    assert t.due().action is Action.WAIT


def test_not_polling_for_max_poll_interval_leaves_the_group(clock: FakeClock) -> None:
    t = timers(clock)
    clock.advance(59)
    t.answered(ok=True)  # heartbeats alone do not keep a stuck application in the group
    clock.advance(0.5)
    due = t.due()
    assert due.action in (Action.SEND, Action.WAIT) and due.wake_at is not None
    assert due.wake_at <= clock.now + 0.5 + 1e-9  # wakes up in time to leave
    clock.advance(1)
    assert t.due().action is Action.LEAVE
    t.polled()
    assert t.due().action is not Action.LEAVE
