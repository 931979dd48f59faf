"""When a group member heartbeats, and when it must give up its place: pure timers on an
injected clock.

Three clocks run while a member holds an assignment (KIP-62):

- ``heartbeat_interval_ms``: the next Heartbeat is due that long after the previous one went
  out (one at a time);
- ``session_timeout_ms``: without a successful heartbeat for that long the coordinator has
  surely evicted the member, so it looks for the coordinator again;
- ``max_poll_interval_ms``: if the application has not called ``poll()`` for that long it is
  stuck, and the member leaves the group so its partitions move to a live member.

The I/O driver asks :meth:`HeartbeatTimers.due` on every turn of the network loop and acts
on the answer; a test drives the same calls with a fake clock.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass


class Action(enum.Enum):
    WAIT = "wait"
    """Nothing to do before ``wake_at``."""
    SEND = "send"
    """Send a Heartbeat now (already counted as sent)."""
    LEAVE = "leave"
    """poll() was not called within max_poll_interval_ms: leave the group."""
    COORDINATOR_LOST = "coordinator_lost"
    """No heartbeat succeeded within session_timeout_ms: find the coordinator again."""


@dataclass(frozen=True)
class Due:
    action: Action
    wake_at: float | None = None
    """When to ask again (None: not until something else changes)."""


class HeartbeatTimers:
    """The heartbeat, session and poll-interval clocks of one member."""

    def __init__(self, heartbeat_interval_ms: float, session_timeout_ms: float,
                 max_poll_interval_ms: float, clock: Callable[[], float] = time.monotonic,
                 ) -> None:
        self._clock = clock
        self.interval = heartbeat_interval_ms / 1000
        self.session_timeout = session_timeout_ms / 1000
        self.max_poll_interval = max_poll_interval_ms / 1000
        now = clock()
        self.last_poll = now
        self.last_success = now
        self.next_heartbeat = 0.0
        self.in_flight = False

    def polled(self) -> None:
        """The application called poll()."""
        self.last_poll = self._clock()

    def joined(self) -> None:
        """A new assignment: the session starts now, the first heartbeat one interval later."""
        now = self._clock()
        self.last_success = now
        self.next_heartbeat = now + self.interval

    def due(self) -> Due:
        """What to do now; SEND marks a heartbeat as in flight until :meth:`answered`."""
        now = self._clock()
        poll_deadline = self.last_poll + self.max_poll_interval
        if now > poll_deadline:
            return Due(Action.LEAVE)
        if now - self.last_success > self.session_timeout:
            return Due(Action.COORDINATOR_LOST)
        if self.in_flight or now < self.next_heartbeat:
            return Due(Action.WAIT, min(self.next_heartbeat, poll_deadline))
        self.in_flight = True
        self.next_heartbeat = now + self.interval
        return Due(Action.SEND, min(self.next_heartbeat, poll_deadline))

    def answered(self, *, ok: bool) -> None:
        """The heartbeat in flight was answered (``ok``: without error) or failed."""
        self.in_flight = False
        if ok:
            self.last_success = self._clock()
