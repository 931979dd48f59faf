"""Client quotas in the coordination store, where Kafka keeps them in ZooKeeper mode.

- ``/config/clients/<client id>`` and ``/config/clients/<default>``;
- ``/config/users/<user>`` and ``/config/users/<default>`` (the node SCRAM credentials of
  the user share: a write keeps the keys it does not change);
- ``/config/users/<user>/clients/<client id>`` (either name may be ``<default>``);

each ``{"version":1,"config":{"producer_byte_rate":"1048576"}}``, names URL-encoded. A
writer then creates a ``/config/changes`` notification naming the entity
(``clients/<c>``, ``users/<u>``, ``users/<u>/clients/<c>``), as Kafka's tools do; every
broker follows the notifications (:class:`ConfigChangeWatcher`) and reads the quotas
again on its coordination worker. The event loop only ever reads :attr:`quotas`, the
snapshot last read. Standalone brokers keep the same nodes in their local store.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import unquote

from kafkalite_server.cluster.config_nodes import alter_config_node, config_of
from kafkalite_server.cluster.config_watcher import ConfigChangeWatcher, notify_config_change
from kafkalite_server.cluster.coordination import (
    Coordination,
    NoNodeError,
)
from kafkalite_server.cluster.store_worker import StoreWorker
from kafkalite_server.quotas.client_quotas import (
    DEFAULT,
    QUOTA_KEYS,
    Name,
    QuotaConfigs,
    QuotaEntity,
    QuotaOp,
    altered,
)
from kafkalite_server.security.security_store import USERS, user_path

log = logging.getLogger(__name__)

CLIENTS = "/config/clients"
DEFAULT_ENTITY = "<default>"


def _node_name(name: Name) -> str:
    """A name as its node is called: ``<default>``, else URL-encoded (as SCRAM's user nodes)."""
    if name.name is None:
        return DEFAULT_ENTITY
    return user_path(name.name).rsplit("/", 1)[1]


def _name_of(node: str) -> Name:
    return DEFAULT if node == DEFAULT_ENTITY else Name(unquote(node))


def entity_path(entity: QuotaEntity) -> str:
    """The entity as a change notification names it (``users/alice/clients/app``)."""
    if entity.user is None:
        assert entity.client_id is not None
        return f"clients/{_node_name(entity.client_id)}"
    path = f"users/{_node_name(entity.user)}"
    if entity.client_id is not None:
        path += f"/clients/{_node_name(entity.client_id)}"
    return path


def _quotas_of(path: str, data: bytes) -> dict[str, float]:
    """The quota keys of a config node (an empty node, a parent made on the way to a user's
    client node, holds none); a node that is no config document is logged and ignored."""
    try:
        return _quotas_in(path, config_of(data))
    except (ValueError, AttributeError):
        log.error("%s is not a config node; its quotas are ignored", path)
        return {}


def _quotas_in(path: str, config: Mapping[str, str]) -> dict[str, float]:
    """The quota keys of a node's config (other keys, e.g. SCRAM credentials, are not
    quotas); a value that is no number is logged and left out."""
    found = {}
    for key, text in config.items():
        if key in QUOTA_KEYS:
            try:
                found[key] = float(text)
            except (TypeError, ValueError):
                log.error("%s: quota %s=%r is not a number; ignored", path, key, text)
    return found


def _text(key: str, value: float) -> str:
    """As Kafka writes them: whole-number keys without a fraction."""
    return str(int(value)) if QUOTA_KEYS[key] else str(value)


class ClientQuotaStore:
    def __init__(self, store: Callable[[], Coordination], worker: StoreWorker) -> None:
        self._store = store
        self._worker = worker
        self.quotas: QuotaConfigs = {}
        """Every entity with quotas, as last read (replaced whole, never changed in place)."""

    async def load(self) -> None:
        await self._worker.call(self._read)

    async def follow_changes(self) -> None:
        """Runs until cancelled: reads the quotas again after each change notification of a
        user or client entity (and after a new session, when some may have been missed)."""
        await ConfigChangeWatcher(self._store, self._worker, self._changed).run()

    async def _changed(self, entity: str | None) -> None:
        if entity is None or entity.startswith(("users/", "clients/")):
            await self._worker.call(self._read)

    async def alter(self, changes: Mapping[QuotaEntity, Sequence[QuotaOp]]) -> None:
        """Applies each entity's (validated) ops to its node as it is in the store (a
        change another broker made meanwhile is kept), then announces it."""
        await self._worker.call(self._write, changes)

    def _read(self) -> None:
        store = self._store()
        found: dict[QuotaEntity, dict[str, float]] = {}

        def read(path: str, entity: QuotaEntity) -> None:
            with contextlib.suppress(NoNodeError):
                quotas = _quotas_of(path, store.get(path)[0])
                if quotas:
                    found[entity] = quotas

        for node in _children(store, CLIENTS):
            read(f"{CLIENTS}/{node}", QuotaEntity(client_id=_name_of(node)))
        for node in _children(store, USERS):
            user = _name_of(node)
            read(f"{USERS}/{node}", QuotaEntity(user=user))
            for client in _children(store, f"{USERS}/{node}/clients"):
                read(f"{USERS}/{node}/clients/{client}", QuotaEntity(user, _name_of(client)))
        self.quotas = found

    def _write(self, changes: Mapping[QuotaEntity, Sequence[QuotaOp]]) -> None:
        store = self._store()
        for entity, ops in changes.items():
            _alter_node(store, f"/config/{entity_path(entity)}", ops)
            notify_config_change(store, entity_path(entity))
        self._read()


def _children(store: Coordination, path: str) -> list[str]:
    try:
        return store.children(path)
    except NoNodeError:
        return []


def _alter_node(store: Coordination, path: str, ops: Sequence[QuotaOp]) -> None:
    """The node's quotas after ``ops`` (see :func:`alter_config_node`); its other keys
    stay."""
    def change(config: dict[str, str]) -> dict[str, str]:
        quotas = altered(_quotas_in(path, config), ops)
        kept = {k: v for k, v in config.items() if k not in QUOTA_KEYS}
        return kept | {key: _text(key, value) for key, value in quotas.items()}

    alter_config_node(store, path, change)
