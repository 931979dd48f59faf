"""Answers to Produce requests that wait for their ISR, written in request order while the
connection reads on.

Kafka reads a connection's next request only once the previous one is answered. A client
with many partitions on one broker sends a Produce per partition batch, so with acks=all
it waited one follower round trip per request in turn: on a broker leading 1,800
partitions, 600 requests took a minute. Here, as in Kafka, each Produce is appended in
arrival order (the next request is read only once this one's records are in the log);
only the wait for the ISR overlaps the requests after it, and every response still leaves
in request order. Any other request waits until the answers before it are out, so its
effects follow theirs as in Kafka.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

MAX_DEFERRED = 100
"""Produce requests one connection may have waiting for their ISR; past it the connection
reads no more until the oldest is answered (its unread bytes wait in the socket)."""

Write = Callable[[asyncio.StreamWriter, list[Any]], Awaitable[None]]


class DeferredResponses:
    def __init__(self, writer: asyncio.StreamWriter, write: Write,
                 on_released: Callable[[], None], limit: int = MAX_DEFERRED) -> None:
        """``on_released`` is told when an answer is out and its request's bytes (still
        counted in :attr:`held`, against ``queued.max.request.bytes``) are freed."""
        self._writer = writer
        self._write = write
        self._on_released = on_released
        self._limit = limit
        self._queue: deque[tuple[asyncio.Task[list[Any] | None], int]] = deque()
        self.held = 0
        """Bytes of the deferred requests: their records stay referenced until answered."""
        self._pump: asyncio.Task[None] | None = None
        self._moved = asyncio.Event()

    def defer(self, task: asyncio.Task[list[Any] | None], nbytes: int) -> None:
        """Answer ``task`` (a request of ``nbytes``, already appended) once it and those
        before it are."""
        self._queue.append((task, nbytes))
        self.held += nbytes
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._answer_in_order())

    async def room(self) -> None:
        """Returns once fewer than the limit wait; raises what a waiting request raised."""
        while len(self._queue) >= self._limit:
            self._moved.clear()
            await self._moved.wait()
        self._raise_failure()

    async def drained(self) -> None:
        """Returns once every deferred answer is written; raises what one raised
        (Disconnect, a connection error), which closes the connection."""
        while self._pump is not None and not self._pump.done():
            await asyncio.shield(self._pump)
        self._raise_failure()

    def close(self) -> None:
        """Drops the answers still waiting (the connection is closing)."""
        for task, _nbytes in self._queue:
            task.cancel()
        if self._pump is not None:
            if self._pump.done() and not self._pump.cancelled():
                self._pump.exception()  # seen: the connection closes because of it
            self._pump.cancel()

    async def _answer_in_order(self) -> None:
        try:
            while self._queue:
                chunks = await self._queue[0][0]
                _task, nbytes = self._queue.popleft()
                self.held -= nbytes
                self._on_released()
                self._moved.set()
                if chunks is not None:
                    await self._write(self._writer, chunks)
        except BaseException:
            self._writer.close()  # the connection's read loop ends at its next read
            raise
        finally:
            self._moved.set()

    def _raise_failure(self) -> None:
        if self._pump is not None and self._pump.done() and not self._pump.cancelled():
            failure = self._pump.exception()
            if failure is not None:
                raise failure
