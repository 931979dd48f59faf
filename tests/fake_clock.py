"""The clock the sans-IO state machines take, moved by the test instead of by time."""

from __future__ import annotations


class FakeClock:
    """Call it for the time (milliseconds or seconds, whichever the code under test counts);
    set ``now`` or ``advance`` it to move time."""

    def __init__(self, now: float = 0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, by: float) -> None:
        self.now += by
