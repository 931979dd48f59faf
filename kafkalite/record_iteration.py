"""``for record in consumer``: the records of successive polls, one at a time.

kafka-python's consumers iterate: each step polls, in slices of at most a second so that a
close from another thread ends the loop, and yields one poll's records in order;
``consumer_timeout_ms`` ends the iteration after that long without a record (None: never).
The classic and the share consumer iterate alike, so the loop is written once, here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from kafkalite.errors import ConfigError

R = TypeVar("R")

_POLL_SLICE_S = 1.0
"""The longest single poll while iterating, so that a close is noticed within it."""


class RecordIterator(Generic[R]):
    def __init__(self, poll: Callable[[float], Sequence[R]], closed: Callable[[], bool],
                 consumer_timeout_ms: float | None) -> None:
        """``poll(timeout_ms)`` returns the next records; ``closed()`` says the consumer
        was closed. A ``consumer_timeout_ms`` that is not a non-negative number or None is
        a ConfigError, raised here, when the consumer is made."""
        if consumer_timeout_ms is not None and (
                not isinstance(consumer_timeout_ms, int | float) or consumer_timeout_ms < 0):
            raise ConfigError("consumer_timeout_ms", "must be a non-negative number or None")
        self._poll = poll
        self._closed = closed
        self._timeout_s = None if consumer_timeout_ms is None else consumer_timeout_ms / 1000
        self._pending: Iterator[R] | None = None

    def __next__(self) -> R:
        deadline = None if self._timeout_s is None else time.monotonic() + self._timeout_s
        while True:
            if self._pending is not None:
                record = next(self._pending, None)
                if record is not None:
                    return record
                self._pending = None
            if self._closed():
                raise StopIteration
            remaining = _POLL_SLICE_S if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise StopIteration
            records = self._poll(min(remaining, _POLL_SLICE_S) * 1000)
            if records:
                self._pending = iter(records)
