"""Waiting in tests for a condition that a cluster reaches in its own time.

Every wait is bounded: past ``timeout`` the test fails naming what it waited for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(condition: Callable[[], T | None], what: str, timeout: float = 40.0, *,
          interval: float = 0.1, tolerate: tuple[type[BaseException], ...] = ()) -> T:
    """Polls ``condition`` until it returns something true and returns that. Exceptions of
    the ``tolerate`` types count as "not yet" (a broker still starting refuses
    connections); any other propagates."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except tolerate:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
