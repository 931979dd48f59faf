"""The clock and timer interface the group coordinator runs on.

The coordinator is sans-IO: it never sleeps and never touches asyncio itself. The broker
injects :class:`LoopScheduler` (asyncio ``call_later``); unit tests inject a fake whose time
only moves when the test says so, which makes session and rebalance timeouts testable
without waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    """A scheduled callback that can still be called off."""

    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """Wall-clock time in milliseconds plus one-shot timers."""

    def now_ms(self) -> int: ...

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle: ...


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class LoopScheduler:
    """:class:`Scheduler` on the running asyncio event loop (the broker's); the coordinator
    is only ever called from that loop, so the loop is looked up when a timer is set."""

    def __init__(self, now_ms: Callable[[], int] = _wall_clock_ms) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        return self._now_ms()

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000.0, callback)
