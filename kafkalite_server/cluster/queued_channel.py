"""The part every controller channel shares: messages in a queue, delivered one at a time
and in order by a task on the broker's event loop.

The controller runs on its own thread (:mod:`active_controller`), so ``send`` and ``close``
hop onto the loop; callbacks queued from one thread run in the order they were queued,
so messages keep the controller's order. A closed channel never delivers again, even if
its task's cancellation were lost in a library (the flag is checked between messages).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod

from kafkalite_server.cluster.messages import ControllerMessage, OnAnswer, PartitionErrors


class QueuedChannel(ABC):
    def __init__(self, loop: asyncio.AbstractEventLoop, name: str) -> None:
        self._loop = loop
        self._name = name
        self._queue: asyncio.Queue[tuple[ControllerMessage, OnAnswer | None]] = \
            asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.closed = False
        loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        if not self.closed:
            self._task = self._loop.create_task(self._run(), name=self._name)

    def send(self, message: ControllerMessage, on_answer: OnAnswer | None = None) -> None:
        if not self.closed and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (message, on_answer))

    def close(self) -> None:
        """Stops at once: nothing queued or in flight is delivered any more."""
        self.closed = True
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def drained(self) -> None:
        """Waits until every message sent so far was delivered, or the channel closed."""
        await asyncio.sleep(0)  # sends made before this call are queued by now
        task = self._task
        if task is None or task.done():
            return
        joined = asyncio.ensure_future(self._queue.join())
        try:
            await asyncio.wait([joined, task], return_when=asyncio.FIRST_COMPLETED)
        finally:
            joined.cancel()

    async def _run(self) -> None:
        try:
            while not self.closed:
                message, on_answer = await self._queue.get()
                answer = await self._deliver(message)
                if answer is None:
                    return
                if on_answer is not None:
                    on_answer(answer)
                self._queue.task_done()
        finally:
            self._release()

    @abstractmethod
    async def _deliver(self, message: ControllerMessage) -> PartitionErrors | None:
        """Delivers one message (retrying as the channel sees fit): the broker's answer,
        or None if the channel closed first."""

    @abstractmethod
    def _release(self) -> None:
        """Frees what the channel holds when its task ends."""
