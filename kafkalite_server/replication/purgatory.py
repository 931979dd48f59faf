"""Purgatory: requests parked until an event completes them or their timeout fires.

Kafka's DelayedOperationPurgatory on asyncio: an operation is watched under keys
(topic-partitions); code that changes a partition calls :meth:`Purgatory.check_and_complete`
with its key, and a timer (``loop.call_later``) completes what is left. No polling.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable


class DelayedOperation(ABC):
    """Subclasses say when they are satisfied; the purgatory does the waiting."""

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self.completed = False

    @abstractmethod
    def is_satisfied(self) -> bool:
        """True once the operation can answer (checked when it is parked)."""

    def is_satisfied_after(self, key: Hashable) -> bool:
        """Checked on each event for ``key``: an operation that watches many keys
        overrides it to look at that key alone, so an event costs the same for a request
        of one partition as for one of thousands (a follower's fetch of every partition
        it replicates would otherwise be rescanned once for each of them)."""
        return self.is_satisfied()


class Purgatory:
    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, list[tuple[DelayedOperation, asyncio.Future[None]]]] = {}

    @property
    def watched(self) -> int:
        """Operations still waiting (each counted once per key it watches)."""
        return sum(len(ops) for ops in self._watchers.values())

    async def wait(self, operation: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Returns True if the operation was satisfied, False if it timed out."""
        if operation.is_satisfied():
            operation.completed = True
            return True
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        watched = list(keys)
        for key in watched:
            self._watchers.setdefault(key, []).append((operation, done))
        timer = loop.call_later(max(operation.timeout_ms, 0) / 1000, _resolve, done)
        try:
            await done
        finally:
            timer.cancel()
            for key in watched:
                self._unwatch(key, operation)
        satisfied = operation.completed
        operation.completed = True
        return satisfied

    def check_and_complete(self, key: Hashable) -> int:
        """Completes every operation watching ``key`` that is now satisfied."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        for operation, done in list(ops):
            if not operation.completed and not done.done() and \
                    operation.is_satisfied_after(key):
                operation.completed = True
                done.set_result(None)
                completed += 1
        return completed

    def _unwatch(self, key: Hashable, operation: DelayedOperation) -> None:
        ops = self._watchers.get(key)
        if ops is None:
            return
        ops[:] = [entry for entry in ops if entry[0] is not operation]
        if not ops:
            del self._watchers[key]


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
