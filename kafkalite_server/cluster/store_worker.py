"""Where a broker's coordination calls run: off its event loop, one at a time, in order.

A ZooKeeper call can wait for as long as the session lasts while the server is
unreachable, and a write to a standalone broker's local store waits for an fsync; on the
event loop either wait would freeze every connection of the broker.
Each broker therefore hands its calls to one worker thread (Kafka's controller has its
event thread for the same reason). One thread keeps them in submission order, which the
controller's read-decide-write steps and the role machine rely on. The loop awaits a
call's result (:meth:`StoreWorker.call`) or fires a step and forgets it
(:meth:`StoreWorker.submit`; its failure is logged).

A store whose calls never wait (the in-memory store of EmbeddedCluster) runs them inline
instead: :meth:`call` on the awaiting task, :meth:`submit` on the next loop turn, so an
in-process cluster stays single-threaded and deterministic.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from kafkalite_server.cluster.coordination import CoordinationError

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")


class StoreWorker:
    def __init__(self, name: str) -> None:
        self.name = name
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def bind(self, loop: asyncio.AbstractEventLoop, *, threaded: bool) -> None:
        """Runs calls on a thread of their own (``threaded``) or inline on ``loop``."""
        self._loop = loop
        if threaded and self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix=self.name)

    @property
    def threaded(self) -> bool:
        return self._executor is not None

    async def call(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``function(*args)``'s result, computed off the loop after every call submitted
        before it."""
        if self._executor is None:
            return function(*args, **kwargs)
        try:
            future = self._executor.submit(function, *args, **kwargs)
        except RuntimeError:
            raise CoordinationError(f"{self.name}: the broker is leaving the cluster") from None
        return await asyncio.wrap_future(future)

    def submit(self, function: Callable[[], object]) -> None:
        """Runs ``function`` after every call submitted before it; safe from any thread.
        A failure is logged: nobody waits for the outcome."""
        if self._closed:
            return
        if self._executor is not None:
            with contextlib.suppress(RuntimeError):  # shut down meanwhile
                self._executor.submit(_logged, self.name, function)
            return
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(_logged, self.name, function)

    def close(self, *, drop_queued: bool = True) -> None:
        """No more calls; those queued are dropped (or, ``drop_queued=False``, still run).
        One in progress finishes on its own."""
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=drop_queued)


def _logged(name: str, function: Callable[[], Any]) -> None:
    try:
        function()
    except Exception:
        log.exception("%s: coordination step failed", name)
