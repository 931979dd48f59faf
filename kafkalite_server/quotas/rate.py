"""A byte rate measured over a sliding window of samples, as Kafka's quota sensors measure
it (``quota.window.num`` samples of ``quota.window.size.seconds``). Pure: time comes in as
``now`` (seconds).

One difference on purpose: Kafka's Rate divides by at least ``num - 1`` full windows, so a
fresh (or long idle) sensor lets ``limit * (num - 1)`` bytes through at once. Here the
elapsed time is at least one window: a throttle holds from the first second, which is what
an operator throttling a reassignment expects.
"""

from __future__ import annotations

from collections import deque


class RateMeter:
    def __init__(self, window_s: float = 1.0, windows: int = 11) -> None:
        self.window_s = window_s
        self.windows = windows
        self._samples: deque[tuple[float, float]] = deque()
        """(window start, amount), oldest first."""

    def record(self, amount: float, now: float) -> None:
        self._expire(now)
        if self._samples and now - self._samples[-1][0] < self.window_s:
            start, total = self._samples[-1]
            self._samples[-1] = (start, total + amount)
        else:
            self._samples.append((now, amount))

    def rate(self, now: float) -> float:
        """Amount per second over the retained samples."""
        self._expire(now)
        if not self._samples:
            return 0.0
        return sum(amount for _start, amount in self._samples) / self.span(now)

    def span(self, now: float) -> float:
        """The seconds the rate is measured over (at least one window)."""
        self._expire(now)
        return self.window_s if not self._samples else max(now - self._samples[0][0],
                                                             self.window_s)

    def _expire(self, now: float) -> None:
        horizon = now - self.window_s * self.windows
        while self._samples and self._samples[0][0] + self.window_s <= horizon:
            self._samples.popleft()
