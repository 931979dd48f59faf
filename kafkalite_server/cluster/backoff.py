"""Exponential backoff with jitter, as Kafka's clients reconnect (``reconnect.backoff.ms``
doubling up to ``reconnect.backoff.max.ms``, each wait spread by +/-20 %), without I/O:
the caller sleeps what :meth:`ExponentialBackoff.next_s` says."""

from __future__ import annotations

import random

RECONNECT_BACKOFF_MS = 50
"""Kafka's ``reconnect.backoff.ms`` default: the first wait."""
RECONNECT_BACKOFF_MAX_MS = 1000
"""Kafka's ``reconnect.backoff.max.ms`` default: no wait is longer (before jitter)."""
JITTER = 0.2


class ExponentialBackoff:
    def __init__(self, base_ms: int = RECONNECT_BACKOFF_MS,
                 max_ms: int = RECONNECT_BACKOFF_MAX_MS, *,
                 rng: random.Random | None = None) -> None:
        self.base_ms = base_ms
        self.max_ms = max_ms
        self._rng = rng or random.Random()
        self.failures = 0

    def next_s(self) -> float:
        """The wait after one more failure, in seconds."""
        self.failures += 1
        wait_ms = min(self.base_ms * 2 ** (self.failures - 1), self.max_ms)
        return wait_ms * self._rng.uniform(1 - JITTER, 1 + JITTER) / 1000

    def reset(self) -> None:
        self.failures = 0
