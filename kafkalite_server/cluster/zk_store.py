"""The coordination interface over a real ZooKeeper, through kazoo.

``zookeeper.connect`` is Kafka's ``host:port[,host:port...][/chroot]``; the chroot is
created if missing, as Kafka does.

A lost connection is not a lost session: ZooKeeper keeps the session (and its ephemeral
nodes) for ``zookeeper.session.timeout.ms``, and kazoo reconnects within it. Two things
are ours to do meanwhile, as Kafka's ZooKeeperClient does:

- **Calls wait for the connection.** A call in flight when the connection drops, or made
  while it is down, is retried once kazoo is connected again, for as long as the session
  may still be alive (``zookeeper.session.timeout.ms`` from the drop); only then does it
  fail with ConnectionLossError. Conditional writes stay safe to retry: a write that did
  apply before the drop fails its version check the second time, and the caller re-reads.
- **Watches survive the blip.** kazoo drops every armed watch when the connection drops
  (it does not re-register them, as the Java client does), so a broker would hear of no
  change again. Each dropped watch, and each watch whose registering call failed on the
  connection, fires once with :attr:`EventType.WATCH_LOST` when the connection is back:
  its owner reads again (seeing whatever changed meanwhile) and re-arms it. When the
  session ends instead, every watch fires that way at once: its owner reads again through
  the broker's next session.

kazoo's reconnect backoff is capped (:data:`RECONNECT_MAX_DELAY_S`), so a broker is
connected again within about that long of ZooKeeper coming back, not after a backoff that
outgrew the outage. Session expiry (kazoo's LOST state) is reported upward.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import EventType as KazooEventType
from kazoo.protocol.states import KazooState, WatchedEvent, ZnodeStat
from kazoo.retry import KazooRetry

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

RECONNECT_MAX_DELAY_S = 0.5
"""The longest wait between two reconnection attempts (kazoo's default grows to an hour)."""

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


class ZooKeeperCoordination(Coordination):
    def __init__(self, connect: str, *, session_timeout_ms: int = 18_000,
                 connection_timeout_ms: int = 18_000) -> None:
        hosts, chroot = split_connect(connect)
        self._hosts = hosts
        self._session_s = session_timeout_ms / 1000
        self._client = KazooClient(
            hosts=hosts, timeout=self._session_s,
            connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=2,
                                        max_delay=RECONNECT_MAX_DELAY_S))
        self._lost: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._closed = False
        self._session_over = False
        self._dropped: list[tuple[Watcher, str]] = []
        self._waiting: set[IAsyncResult] = set()
        """Calls waiting for an answer: :meth:`close` ends their wait."""
        self._client.add_listener(self._on_state)
        with _translated():
            try:
                self._client.start(timeout=connection_timeout_ms / 1000)
            except Exception as exc:
                self._client.close()
                raise ConnectionLossError(
                    f"cannot reach ZooKeeper at {hosts}: {exc or type(exc).__name__}") from None
            self._connected.set()
            if chroot:
                self._client.ensure_path(chroot)
                self._client.chroot = chroot

    # ------------------------------------------------------------------ connection

    def _on_state(self, state: Any) -> None:
        """kazoo's connection thread: must not block (callbacks go to its workers)."""
        if state == KazooState.CONNECTED:
            with self._lock:
                self._connected.set()
                dropped, self._dropped = self._dropped, []
            if dropped:
                log.info("ZooKeeper at %s: connected again within the session; %d watched "
                         "node(s) to read again", self._hosts, len(dropped))
            for watch, path in dropped:
                self._client.handler.spawn(watch, WatchEvent(EventType.WATCH_LOST, path))
        elif state == KazooState.SUSPENDED:
            self._connected.clear()
            log.warning("ZooKeeper at %s: connection lost; the session lives on for up to "
                        "%.1f s while reconnecting", self._hosts, self._session_s)
        elif state == KazooState.LOST:
            with self._lock:
                self._connected.clear()
                self._session_over = True
                dropped, self._dropped = self._dropped, []
            for watch, path in dropped:
                self._client.handler.spawn(watch, WatchEvent(EventType.WATCH_LOST, path))
            callbacks, self._lost = self._lost, []
            for callback in callbacks:
                self._client.handler.spawn(callback)

    def _watcher(self, watch: Watcher | None, path: str
                 ) -> Callable[[WatchedEvent], None] | None:
        if watch is None:
            return None

        def on_event(event: WatchedEvent) -> None:
            kind = _EVENTS.get(event.type)
            if kind is not None:
                watch(WatchEvent(kind, event.path))
            else:  # kazoo dropped it with the connection
                self._dropped_watch(watch, path)
        return on_event

    def _dropped_watch(self, watch: Watcher, path: str) -> None:
        """Fires ``watch`` once the connection is back (at once if it already is, or if
        the session is over)."""
        with self._lock:
            if not self._connected.is_set() and not self._session_over:
                self._dropped.append((watch, path))
                return
        self._client.handler.spawn(watch, WatchEvent(EventType.WATCH_LOST, path))

    def _call(self, start: Callable[[], IAsyncResult], watch: Watcher | None = None,
              path: str = "") -> Any:
        """``start()``'s result, retried across a dropped connection while the session may
        live; a watch whose registration failed fires when the connection is back."""
        deadline = time.monotonic() + self._session_s
        try:
            while True:
                if self._closed:
                    raise SessionExpiredError(f"the session with {self._hosts} is closed")
                result = start()
                self._waiting.add(result)
                try:
                    with _translated():
                        return result.get(timeout=max(deadline - time.monotonic(), 0.001))
                except ConnectionLossError:
                    if self._closed or not self._connected.wait(
                            max(deadline - time.monotonic(), 0)):
                        raise
                except self._client.handler.timeout_exception:
                    raise ConnectionLossError(
                        f"no answer from ZooKeeper at {self._hosts} within "
                        f"{self._session_s:.1f} s") from None
                finally:
                    self._waiting.discard(result)
        except ConnectionLossError:
            if watch is not None:
                self._dropped_watch(watch, path)
            raise

    @property
    def connected(self) -> bool:
        return self._connected.is_set() and not self._closed

    @property
    def session_id(self) -> int:
        client_id = self._client.client_id
        return int(client_id[0]) if client_id else 0

    # ------------------------------------------------------------------ operations

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequential: bool = False, makepath: bool = False) -> str:
        return str(self._call(lambda: self._client.create_async(
            path, data, ephemeral=ephemeral, sequence=sequential, makepath=makepath)))

    def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]:
        watcher = self._watcher(watch, path)
        data, stat = self._call(lambda: self._client.get_async(path, watch=watcher),
                                watch, path)
        return bytes(data), _stat(stat)

    def exists(self, path: str, watch: Watcher | None = None) -> Stat | None:
        watcher = self._watcher(watch, path)
        stat = self._call(lambda: self._client.exists_async(path, watch=watcher), watch, path)
        return None if stat is None else _stat(stat)

    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        watcher = self._watcher(watch, path)
        return sorted(self._call(lambda: self._client.get_children_async(path, watch=watcher),
                                 watch, path))

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        return _stat(self._call(lambda: self._client.set_async(path, data, version=version)))

    def delete(self, path: str, version: int = ANY_VERSION, *, recursive: bool = False) -> None:
        if recursive:
            try:
                for child in self.children(path):
                    self.delete(f"{path.rstrip('/')}/{child}", recursive=True)
            except NoNodeError:
                return
        self._call(lambda: self._client.delete_async(path, version=version))

    def commit(self, ops: Sequence[Op]) -> None:
        def start() -> IAsyncResult:
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
            return transaction.commit_async()
        results = self._call(start)
        for result in results:
            if isinstance(result, Exception) and not isinstance(result, kz.RolledBackError):
                with _translated():
                    raise result

    def on_session_lost(self, callback: Callable[[], None]) -> None:
        self._lost.append(callback)

    def close(self) -> None:
        """Ends the session; calls still waiting (for an unreachable server) fail at once.
        Bounded even without a server: kazoo's reconnect loop stops within its capped
        backoff (or a connection attempt's timeout)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._lost = []
        self._connected.set()  # nobody waits for a connection any more
        for result in list(self._waiting):
            if not result.ready():
                result.set_exception(kz.ConnectionClosedError("the session was closed"))
        try:
            self._client.stop()
            self._client.close()
        except Exception as exc:  # kazoo gave up waiting for its connection thread
            log.warning("ZooKeeper at %s: closing the session: %s", self._hosts, exc)
