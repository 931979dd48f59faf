"""A broker's follower of ``/config/changes``: Kafka's ZooKeeper-mode config change
notifications.

Whoever changes a topic's or a broker's dynamic configs writes the config node, then
creates a sequential ``config_change_NNNNNNNNNN`` naming the entity (``topics/<t>``,
``brokers/<id>``, ``brokers/<default>``). Every broker watches the children, and for each
notification newer than the last it handled re-reads that entity and applies it to its
logs. Re-reading is idempotent, so handling a notification twice is harmless; after a
session expiry (watches are lost) the watcher arms again on the new session and asks for
everything to be re-read, since notifications may have been missed meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kafkalite_server.cluster import zk_layout as zk
from kafkalite_server.cluster.coordination import Coordination, CoordinationError, NoNodeError

log = logging.getLogger(__name__)

RETRY_S = 0.2
KEPT_NOTIFICATIONS = 100
"""Writers delete older notifications beyond this many (Kafka purges them by age)."""

Apply = Callable[[str | None], None]
"""Called with an entity path (``topics/orders``), or None: re-read everything."""


def sequence_of(name: str) -> int:
    return int(name.rsplit("_", 1)[1])


def notify_config_change(store: Coordination, entity_path: str) -> None:
    """Announces a config node change to every broker, and trims old notifications."""
    store.ensure_path(zk.CONFIG_CHANGES)
    store.create(zk.CONFIG_CHANGE_PREFIX, zk.encode_config_change(entity_path),
                 sequential=True)
    names = sorted(store.children(zk.CONFIG_CHANGES), key=sequence_of)
    for name in names[:-KEPT_NOTIFICATIONS]:
        try:
            store.delete(f"{zk.CONFIG_CHANGES}/{name}")
        except NoNodeError:
            continue


class ConfigChangeWatcher:
    def __init__(self, store: Callable[[], Coordination], apply: Apply) -> None:
        """``store()`` is the broker's current session; ``apply`` runs on the loop of
        :meth:`run`."""
        self._store = store
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
                self._process(wake)
            except CoordinationError as exc:
                log.info("config changes: %s; trying again", exc)
                await asyncio.sleep(RETRY_S)
                continue
            await self._wake.wait()

    def _process(self, wake: Callable[..., None]) -> None:
        store = self._store()
        if store.session_id != self._session:
            self._new_session(store, wake)
        names = store.children(zk.CONFIG_CHANGES, watch=wake)
        for name in sorted(names, key=sequence_of):
            if sequence_of(name) <= self._last:
                continue
            path = f"{zk.CONFIG_CHANGES}/{name}"
            try:
                entity = zk.decode_config_change(path, store.get(path)[0])
            except NoNodeError:
                continue
            self._apply(entity)
            self._last = sequence_of(name)

    def _new_session(self, store: Coordination, wake: Callable[..., None]) -> None:
        """Watches went with the old session: arm on this one and re-read everything."""
        store.ensure_path(zk.CONFIG_CHANGES)
        store.on_session_lost(wake)
        if self._session is not None:
            self._apply(None)
        self._session = store.session_id
