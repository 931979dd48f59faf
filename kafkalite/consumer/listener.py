"""The rebalance callback interfaces, as in the Java client and kafka-python: a plain one and
kafka-python 3's async one, and :func:`notify`, which runs either kind."""

from __future__ import annotations

import asyncio
import inspect
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafkalite.structs import TopicPartition


class ConsumerRebalanceListener(ABC):
    """Hooks around a group rebalance; both run inside ``poll()`` on the application's thread.

    ``on_partitions_revoked`` runs before the consumer rejoins, after auto commit (when on)
    committed the consumed positions: the place to commit manually or flush state.
    ``on_partitions_assigned`` runs once the new assignment is known, before any fetch.
    """

    @abstractmethod
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    @abstractmethod
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        """Partitions taken away without a clean revoke (KIP-429); by default the same as
        :meth:`on_partitions_revoked`, as in kafka-python."""
        self.on_partitions_revoked(lost)


class AsyncConsumerRebalanceListener(ABC):
    """kafka-python 3's listener whose hooks are coroutines (``async def``). kafkalite's
    consumer runs on threads, not an event loop: :func:`notify` runs each hook to completion
    inside ``poll()``, so the ordering guarantees are those of the plain listener."""

    @abstractmethod
    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...

    @abstractmethod
    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...

    async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        await self.on_partitions_revoked(lost)


def notify(listener: Any, hook: str, partitions: set[TopicPartition]) -> None:
    """Call ``listener.<hook>(partitions)``; when it returns a coroutine, run it to the end
    (on a fresh event loop, in a helper thread if this thread already runs a loop). A
    duck-typed listener without ``on_partitions_lost`` gets ``on_partitions_revoked``."""
    fallback = "on_partitions_revoked" if hook == "on_partitions_lost" else hook
    result = (getattr(listener, hook, None) or getattr(listener, fallback))(partitions)
    if inspect.iscoroutine(result):
        _run(result)


def _run(coroutine: Coroutine[Any, Any, Any]) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coroutine)
        return
    with ThreadPoolExecutor(1, thread_name_prefix="rebalance-listener") as pool:
        pool.submit(asyncio.run, coroutine).result()
