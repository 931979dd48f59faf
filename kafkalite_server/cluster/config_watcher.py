"""A broker's follower of ``/config/changes``: Kafka's ZooKeeper-mode config change
notifications.

Whoever changes a topic's or a broker's dynamic configs writes the config node, then
creates a sequential ``config_change_NNNNNNNNNN`` naming the entity (``topics/<t>``,
``brokers/<id>``, ``brokers/<default>``). Every broker watches the children, and for each
notification newer than the last it handled re-reads that entity and applies it to its
logs. Re-reading is idempotent, so handling a notification twice is harmless; after a
session expiry (watches are lost) the watcher arms again on the new session and asks for
everything to be re-read, since notifications may have been missed meanwhile. The store
is read on the broker's coordination worker; the event loop only applies what was read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.coordination import Coordination, CoordinationError, NoNodeError
from kafkalite_server.cluster.store_worker import StoreWorker

log = logging.getLogger(__name__)

RETRY_S = 0.2
KEPT_NOTIFICATIONS = 100
"""Writers delete older notifications beyond this many (Kafka purges them by age)."""

Apply = Callable[[str | None], Awaitable[None]]
"""Called with an entity path (``topics/orders``), or None: re-read everything."""


def sequence_of(name: str) -> int:
    return int(name.rsplit("_", 1)[1])


def notify_config_change(store: Coordination, entity_path: str) -> None:
    """Announces a config node change to every broker, and trims old notifications."""
    store.ensure_path(layout.CONFIG_CHANGES)
    store.create(layout.CONFIG_CHANGE_PREFIX, layout.encode_config_change(entity_path),
                 sequential=True)
    names = sorted(store.children(layout.CONFIG_CHANGES), key=sequence_of)
    for name in names[:-KEPT_NOTIFICATIONS]:
        try:
            store.delete(f"{layout.CONFIG_CHANGES}/{name}")
        except NoNodeError:
            continue


class ConfigChangeWatcher:
    def __init__(self, store: Callable[[], Coordination], worker: StoreWorker,
                 apply: Apply) -> None:
        """``store()`` is the broker's current session; its calls run on ``worker``, and
        ``apply`` (which reads the entity off the loop itself) runs on the loop of
        :meth:`run`."""
        self._store = store
        self._worker = worker
        self._apply = apply
        self._last = -1
        self._session: int | None = None
        self._wake = asyncio.Event()

    async def run(self) -> None:
        """Handles notifications until cancelled (with the broker's other tasks)."""
        loop = asyncio.get_running_loop()

        def wake(_event: object = None) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(self._wake.set)
        while True:
            self._wake.clear()
            try:
                entities = await self._worker.call(self._new_changes, wake)
                for entity in entities:
                    await self._apply(entity)
            except CoordinationError as exc:
                log.info("config changes: %s; trying again", exc)
                await asyncio.sleep(RETRY_S)
                continue
            await self._wake.wait()

    def _new_changes(self, wake: Callable[..., None]) -> list[str | None]:
        """The entities of the notifications not handled yet, in order (None first after a
        new session: re-read everything); arms the watch again."""
        store = self._store()
        entities: list[str | None] = []
        if store.session_id != self._session:
            store.ensure_path(layout.CONFIG_CHANGES)
            store.on_session_lost(wake)
            if self._session is not None:  # watches went with the old session
                entities.append(None)
            self._session = store.session_id
        names = store.children(layout.CONFIG_CHANGES, watch=wake)
        for name in sorted(names, key=sequence_of):
            if sequence_of(name) <= self._last:
                continue
            path = f"{layout.CONFIG_CHANGES}/{name}"
            try:
                entities.append(layout.decode_config_change(path, store.get(path)[0]))
            except NoNodeError:
                continue
            self._last = sequence_of(name)
        return entities
