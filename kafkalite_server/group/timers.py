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


class LoopScheduler:
    """:class:`Scheduler` on an asyncio event loop (the broker's)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return self._loop.call_later(max(delay_ms, 0) / 1000.0, callback)
