"""The coordination service the cluster runs on: ZooKeeper's model, behind one interface.

Sessions with expiry, ephemeral nodes that vanish with their session, persistent nodes,
one-shot watches, and writes conditional on a node's version (zkVersion), alone or in an
atomic batch. Three backends implement it: :mod:`zk_store` over a real ZooKeeper (kazoo),
:mod:`memory_store` in memory with a controllable clock (EmbeddedCluster and unit tests),
and :mod:`local_store`, the in-memory one made durable (a standalone broker), so the
controller and brokers run the same code over all of them.

Calls are synchronous and may wait for as long as the session lives while the server is
unreachable (brokers make them off their event loop). Watch callbacks run on the backend's
thread, after the change that fired them; drivers hop to their own thread or loop before
acting. A watch fires once: on its node's change, or (:attr:`EventType.WATCH_LOST`) when
the connection comes back after it was lost while the watch was armed, or when the session
ends. Every owner of a watch treats any event as "read again and re-arm", so neither a
blip nor a new session loses a change.
"""

from __future__ import annotations

import contextlib
import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafkalite.errors import KafkaError

ANY_VERSION = -1


class CoordinationError(KafkaError):
    """A coordination call failed; subclasses name the ZooKeeper error."""


class NodeExistsError(CoordinationError):
    pass


class NoNodeError(CoordinationError):
    pass


class BadVersionError(CoordinationError):
    """A conditional write lost: the node changed since its version was read."""


class NotEmptyError(CoordinationError):
    pass


class SessionExpiredError(CoordinationError):
    """The session is gone (and its ephemeral nodes with it); nothing more can be done
    through it."""


class ConnectionLossError(CoordinationError):
    """The server could not be reached; the outcome of the call is unknown."""


@dataclass(frozen=True, slots=True)
class Stat:
    version: int
    creation_id: int
    """The creating transaction's id (czxid): a broker's epoch is that of its registration."""
    ephemeral_owner: int = 0
    """The owning session's id for an ephemeral node, else 0."""


class EventType(enum.Enum):
    CREATED = "created"
    DELETED = "deleted"
    CHANGED = "changed"
    CHILD = "child"
    WATCH_LOST = "watch lost"
    """The watch lost track of its node: the connection dropped while it was armed (or
    being armed), and is back now; or the session ended. Anything may have changed
    meanwhile: read again (through the current session) and arm the watch again."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    path: str


Watcher = Callable[[WatchEvent], None]


@dataclass(frozen=True, slots=True)
class Create:
    path: str
    data: bytes = b""
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class Check:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = ANY_VERSION


Op = Create | SetData | Check | Delete


class Coordination(ABC):
    """One client session."""

    calls_block = True
    """A call may wait on a server (for as long as the session lasts while it is
    unreachable), so brokers make their calls off the event loop
    (:mod:`~kafkalite_server.cluster.store_worker`)."""

    @property
    @abstractmethod
    def session_id(self) -> int: ...

    @property
    @abstractmethod
    def connected(self) -> bool:
        """Whether the server can be reached now (a call made now is answered at once)."""

    @abstractmethod
    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequential: bool = False, makepath: bool = False) -> str:
        """The created path (with the sequence suffix for a sequential node)."""

    @abstractmethod
    def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]:
        """Raises NoNodeError; ``watch`` fires once on the node's change or deletion."""

    @abstractmethod
    def exists(self, path: str, watch: Watcher | None = None) -> Stat | None:
        """``watch`` fires once on creation, change or deletion."""

    @abstractmethod
    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        """Child names, sorted; ``watch`` fires once when a child comes or goes."""

    @abstractmethod
    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        """Raises BadVersionError unless ``version`` is the node's (or ANY_VERSION)."""

    @abstractmethod
    def delete(self, path: str, version: int = ANY_VERSION, *,
               recursive: bool = False) -> None: ...

    @abstractmethod
    def commit(self, ops: Sequence[Op]) -> None:
        """All ops or none; raises the error of the first op that failed."""

    @abstractmethod
    def on_session_lost(self, callback: Callable[[], None]) -> None:
        """``callback`` runs once if the session expires (its ephemeral nodes are gone)."""

    @abstractmethod
    def close(self) -> None:
        """Ends the session: its ephemeral nodes go at once."""

    def ensure_path(self, path: str) -> None:
        """Creates the persistent node and its parents unless they exist."""
        if self.exists(path) is None:
            with contextlib.suppress(NodeExistsError):
                self.create(path, makepath=True)


def parent_of(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


def check_path(path: str) -> None:
    if not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise CoordinationError(f"invalid node path {path!r}")
