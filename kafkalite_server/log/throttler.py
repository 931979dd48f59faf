"""A byte-rate limit for background I/O (``log.cleaner.io.max.bytes.per.second``).

The caller reports bytes as it reads or writes them; when the rate over the current
window is above the limit, :meth:`Throttler.maybe_throttle` sleeps until it is not. The
clock and the sleep are injected, so tests run on a fake clock and a stop can cut a sleep
short (the cleaner passes ``threading.Event.wait``).
"""

from __future__ import annotations

from collections.abc import Callable

WINDOW_SECONDS = 1.0
"""The rate is measured over windows of this length (then the count starts again)."""


class Throttler:
    def __init__(self, bytes_per_second: float, *, clock: Callable[[], float],
                 sleep: Callable[[float], object]) -> None:
        self.bytes_per_second = bytes_per_second
        self._clock = clock
        self._sleep = sleep
        self._window_start = clock()
        self._bytes = 0
        self.slept_seconds = 0.0

    def maybe_throttle(self, byte_count: int) -> None:
        if self.bytes_per_second <= 0 or self.bytes_per_second >= 1e300:
            return  # Kafka's default (Double.MAX_VALUE): no limit
        self._bytes += byte_count
        elapsed = self._clock() - self._window_start
        due = self._bytes / self.bytes_per_second
        if due > elapsed:
            self._sleep(due - elapsed)
            self.slept_seconds += due - elapsed
            elapsed = due
        if elapsed >= WINDOW_SECONDS:
            self._window_start = self._clock()
            self._bytes = 0
