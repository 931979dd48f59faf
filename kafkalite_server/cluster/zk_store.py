"""The coordination interface over a real ZooKeeper, through kazoo.

``zookeeper.connect`` is Kafka's ``host:port[,host:port...][/chroot]``; the chroot is
created if missing, as Kafka does. kazoo retries connection loss within the session, so
the only loss reported upward is session expiry (kazoo's LOST state).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient
from kazoo.protocol.states import EventType as KazooEventType
from kazoo.protocol.states import KazooState, WatchedEvent, ZnodeStat

from kafkalite_server.cluster.coordination import (
    ANY_VERSION,
    BadVersionError,
    Check,
    ConnectionLossError,
    Coordination,
    CoordinationError,
    Create,
    Delete,
    EventType,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    SessionExpiredError,
    SetData,
    Stat,
    Watcher,
    WatchEvent,
)

log = logging.getLogger(__name__)

_ERRORS: list[tuple[type[Exception], type[CoordinationError]]] = [
    (kz.NodeExistsError, NodeExistsError),
    (kz.NoNodeError, NoNodeError),
    (kz.BadVersionError, BadVersionError),
    (kz.NotEmptyError, NotEmptyError),
    (kz.SessionExpiredError, SessionExpiredError),
    (kz.ConnectionClosedError, SessionExpiredError),
    (kz.ConnectionLoss, ConnectionLossError),
    (kz.OperationTimeoutError, ConnectionLossError),
]
_EVENTS = {
    KazooEventType.CREATED: EventType.CREATED,
    KazooEventType.DELETED: EventType.DELETED,
    KazooEventType.CHANGED: EventType.CHANGED,
    KazooEventType.CHILD: EventType.CHILD,
}


def split_connect(connect: str) -> tuple[str, str]:
    """``"h1:2181,h2:2181/kafka"`` -> (``"h1:2181,h2:2181"``, ``"/kafka"``)."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, ("/" + chroot.rstrip("/")) if slash and chroot.strip("/") else ""


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except kz.KazooException as exc:
        for theirs, ours in _ERRORS:
            if isinstance(exc, theirs):
                raise ours(str(exc) or type(exc).__name__) from None
        raise CoordinationError(f"{type(exc).__name__}: {exc}") from None


def _stat(stat: ZnodeStat) -> Stat:
    return Stat(stat.version, stat.czxid, stat.ephemeralOwner)


def _watcher(watch: Watcher | None) -> Callable[[WatchedEvent], None] | None:
    if watch is None:
        return None

    def on_event(event: WatchedEvent) -> None:
        kind = _EVENTS.get(event.type)
        if kind is not None:
            watch(WatchEvent(kind, event.path))
    return on_event


class ZooKeeperCoordination(Coordination):
    def __init__(self, connect: str, *, session_timeout_ms: int = 18_000,
                 connection_timeout_ms: int = 18_000) -> None:
        hosts, chroot = split_connect(connect)
        self._client = KazooClient(hosts=hosts, timeout=session_timeout_ms / 1000)
        self._lost: list[Callable[[], None]] = []
        self._client.add_listener(self._on_state)
        with _translated():
            try:
                self._client.start(timeout=connection_timeout_ms / 1000)
            except Exception as exc:
                self._client.close()
                raise ConnectionLossError(
                    f"cannot reach ZooKeeper at {hosts}: {exc or type(exc).__name__}") from None
            if chroot:
                self._client.ensure_path(chroot)
                self._client.chroot = chroot

    def _on_state(self, state: Any) -> None:
        if state == KazooState.LOST:
            callbacks, self._lost = self._lost, []
            for callback in callbacks:
                self._client.handler.spawn(callback)

    @property
    def session_id(self) -> int:
        client_id = self._client.client_id
        return int(client_id[0]) if client_id else 0

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequential: bool = False, makepath: bool = False) -> str:
        with _translated():
            return str(self._client.create(path, data, ephemeral=ephemeral,
                                           sequence=sequential, makepath=makepath))

    def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]:
        with _translated():
            data, stat = self._client.get(path, watch=_watcher(watch))
        return bytes(data), _stat(stat)

    def exists(self, path: str, watch: Watcher | None = None) -> Stat | None:
        with _translated():
            stat = self._client.exists(path, watch=_watcher(watch))
        return None if stat is None else _stat(stat)

    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        with _translated():
            return sorted(self._client.get_children(path, watch=_watcher(watch)))

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        with _translated():
            return _stat(self._client.set(path, data, version=version))

    def delete(self, path: str, version: int = ANY_VERSION, *, recursive: bool = False) -> None:
        with _translated():
            self._client.delete(path, version=version, recursive=recursive)

    def commit(self, ops: Sequence[Op]) -> None:
        with _translated():
            transaction = self._client.transaction()
            for op in ops:
                if isinstance(op, Create):
                    transaction.create(op.path, op.data, ephemeral=op.ephemeral)
                elif isinstance(op, SetData):
                    transaction.set_data(op.path, op.data, version=op.version)
                elif isinstance(op, Check):
                    transaction.check(op.path, op.version)
                elif isinstance(op, Delete):
                    transaction.delete(op.path, version=op.version)
            results = transaction.commit()
        for result in results:
            if isinstance(result, Exception) and not isinstance(result, kz.RolledBackError):
                with _translated():
                    raise result

    def on_session_lost(self, callback: Callable[[], None]) -> None:
        self._lost.append(callback)

    def close(self) -> None:
        self._lost = []
        try:
            self._client.stop()
        finally:
            self._client.close()
