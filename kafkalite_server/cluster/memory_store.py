"""The coordination interface in memory: ZooKeeper's semantics without a server.

A :class:`MemoryEnsemble` holds the node tree, the sessions and a clock (wall clock, or a
controllable one in tests). Each :meth:`MemoryEnsemble.connect` opens a session. A session
stays alive while its client is not paused; a paused client (a broker frozen by a long GC
pause or cut off by a partition) is expired once ``session_timeout_ms`` passes on the clock
without it, at the next :meth:`MemoryEnsemble.tick`, and :meth:`MemoryEnsemble.expire`
expires one at once. Expiry deletes the session's ephemeral nodes, fires their watches and
tells the client (``on_session_lost``); later calls through it raise SessionExpiredError.
:meth:`MemoryEnsemble.snapshot` and :meth:`MemoryEnsemble.restored` carry the persistent
nodes (data, version, creation id) over a restart, as ZooKeeper's own snapshot does;
sessions and ephemeral nodes never survive one.

Every call is a transaction: the first time it touches a node, the node as it was is put
aside, so a call that fails (a lost version check in the middle of a batch) puts back only
what it touched, and watches fire only once a call has succeeded. The durable store
(:mod:`~kafkalite_server.cluster.local_store`) subclasses the ensemble and writes each
call's changes (:meth:`MemoryEnsemble._persist`) to its journal before the call returns.

Single-threaded: use one ensemble from one thread (EmbeddedCluster's loop).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from kafkalite_server.cluster.coordination import (
    ANY_VERSION,
    BadVersionError,
    Check,
    Coordination,
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
    check_path,
    parent_of,
)
from kafkalite_server.log.log import wall_clock_ms

T = TypeVar("T")
Events = list[tuple[Watcher, WatchEvent]]
"""Watch callbacks to run, with their events, once a call has succeeded."""


@dataclass
class Node:
    data: bytes
    creation_id: int
    owner: int = 0
    version: int = 0
    sequence: int = 0
    """The number of the next sequential child."""

    def encode(self) -> list[Any]:
        """A persistent node as JSON: ``[data as latin-1 text, version, next sequence
        number, creation id]``."""
        return [self.data.decode("latin-1"), self.version, self.sequence, self.creation_id]

    @classmethod
    def decode(cls, entry: Sequence[Any]) -> Node:
        """Reads :meth:`encode`'s form (snapshots before creation ids had three items)."""
        data, version, sequence, *creation = entry
        return cls(str(data).encode("latin-1"), int(creation[0]) if creation else 0,
                   version=int(version), sequence=int(sequence))

    def stat(self) -> Stat:
        return Stat(self.version, self.creation_id, self.owner)


@dataclass
class _Session:
    session_id: int
    timeout_ms: int
    last_seen_ms: int
    client: MemoryCoordination
    paused: bool = False
    alive: bool = True
    lost_callbacks: list[Callable[[], None]] = field(default_factory=list)


@dataclass
class _Fired:
    watches: dict[str, list[Watcher]]
    path: str
    kind: EventType
    event_path: str


class MemoryEnsemble:
    def __init__(self, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.clock = clock
        self._nodes: dict[str, Node] = {"/": Node(b"", 0)}
        self._kids: dict[str, set[str]] = {}
        """Each node's children by name: listing them never scans the whole tree."""
        self._sessions: dict[int, _Session] = {}
        self._last_session_id = 0
        self._last_zxid = 0
        """The id of the last transaction that created a node (the next czxid is above)."""
        self._data_watches: dict[str, list[Watcher]] = {}
        self._child_watches: dict[str, list[Watcher]] = {}
        self._originals: dict[str, Node | None] = {}
        """The running call's touched nodes as they were before it (None: absent)."""
        self._fired: list[_Fired] = []

    def connect(self, session_timeout_ms: int = 18_000) -> MemoryCoordination:
        self._last_session_id += 1
        session_id = self._last_session_id
        client = self._new_client(session_id)
        self._sessions[session_id] = _Session(session_id, session_timeout_ms, self.clock(),
                                              client)
        return client

    def _new_client(self, session_id: int) -> MemoryCoordination:
        return MemoryCoordination(self, session_id)

    # ------------------------------------------------------------------ persistent nodes

    def persistent_nodes(self) -> Iterator[tuple[str, Node]]:
        return ((path, node) for path, node in self._nodes.items()
                if not node.owner and path != "/")

    def _load_nodes(self, encoded: dict[str, Sequence[Any]]) -> None:
        """Puts the encoded persistent nodes in the tree (parents sort before children)."""
        for path, entry in sorted(encoded.items()):
            node = Node.decode(entry)
            if not node.creation_id:  # an old snapshot: creation order is all there is
                node.creation_id = self._last_zxid + 1
            self._last_zxid = max(self._last_zxid, node.creation_id)
            self._put_node(path, node)

    def snapshot(self) -> bytes:
        """The persistent nodes as JSON: ``{path: Node.encode()}``."""
        return json.dumps({path: node.encode() for path, node in self.persistent_nodes()},
                          sort_keys=True).encode()

    @classmethod
    def restored(cls, snapshot: bytes, clock: Callable[[], int] = wall_clock_ms
                 ) -> MemoryEnsemble:
        """An ensemble holding the nodes of ``snapshot``."""
        ensemble = cls(clock)
        ensemble._load_nodes(json.loads(snapshot))
        return ensemble

    # ------------------------------------------------------------------ session control

    def pause(self, session_id: int) -> None:
        """The client stops talking to the ensemble (it does not know it)."""
        session = self._sessions[session_id]
        session.paused = True
        session.last_seen_ms = self.clock()

    def resume(self, session_id: int) -> None:
        session = self._sessions[session_id]
        session.paused = False
        session.last_seen_ms = self.clock()

    def tick(self) -> list[int]:
        """Expires every paused session silent for longer than its timeout; their ids."""
        now = self.clock()
        expired = [s.session_id for s in self._sessions.values()
                   if s.alive and s.paused and now - s.last_seen_ms > s.timeout_ms]
        for session_id in expired:
            self.expire(session_id)
        return expired

    def expire(self, session_id: int) -> None:
        session = self._sessions.get(session_id)
        if session is None or not session.alive:
            return
        session.alive = False

        def remove_ephemerals() -> None:
            for path in sorted((p for p, n in self._nodes.items() if n.owner == session_id),
                               reverse=True):
                self._remove(path)
        _result, events = self._transaction(remove_ephemerals)
        callbacks = session.lost_callbacks if not session.paused else []
        if session.paused:
            session.client.lost_while_paused = session.lost_callbacks
        deliver(events)
        for callback in callbacks:
            callback()

    def owner_of(self, path: str) -> int:
        """The session owning an ephemeral node (0 if persistent); raises NoNodeError."""
        return self._node(path).owner

    def session_alive(self, session_id: int) -> bool:
        session = self._sessions.get(session_id)
        return session is not None and session.alive

    # ------------------------------------------------------------------ transactions

    def _call(self, session_id: int, action: Callable[[], T]) -> tuple[T, Events]:
        """``action()`` as one transaction of a live session; the watch events it fired,
        to be delivered by the caller."""
        self._live(session_id)
        return self._transaction(action)

    def _transaction(self, action: Callable[[], T]) -> tuple[T, Events]:
        self._originals, self._fired = {}, []
        last_zxid = self._last_zxid
        try:
            result = action()
            if self._originals:
                self._persist(self._originals)
        except BaseException:
            for path, original in self._originals.items():
                if original is None:
                    self._drop_node(path)
                else:
                    self._put_node(path, original)
            self._last_zxid = last_zxid
            raise
        finally:
            fired, self._originals, self._fired = self._fired, {}, []
        return result, self._arm_events(fired)

    def _persist(self, originals: dict[str, Node | None]) -> None:
        """Makes the call's changes durable (the nodes at ``originals``' paths as they are
        now); raising undoes the call. In memory, nothing to do."""

    def _touch(self, path: str) -> None:
        """Keeps ``path``'s node as it was before the running call first changed it."""
        if path not in self._originals:
            node = self._nodes.get(path)
            self._originals[path] = None if node is None else replace(node)

    def _arm_events(self, fired: list[_Fired]) -> Events:
        events: Events = []
        for entry in fired:
            for watcher in entry.watches.pop(entry.path, []):
                events.append((watcher, WatchEvent(entry.kind, entry.event_path)))
        return events

    # ------------------------------------------------------------------ tree operations

    def _live(self, session_id: int) -> _Session:
        session = self._sessions[session_id]
        if not session.alive:
            raise SessionExpiredError(f"session {session_id:#x} has expired")
        if session.paused:
            raise SessionExpiredError(f"session {session_id:#x} cannot reach the ensemble")
        session.last_seen_ms = self.clock()
        return session

    def _node(self, path: str) -> Node:
        check_path(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        return node

    def _children(self, path: str) -> list[str]:
        return sorted(self._kids.get(path, ()))

    def _put_node(self, path: str, node: Node) -> None:
        if path not in self._nodes and path != "/":
            parent, _, name = path.rpartition("/")
            self._kids.setdefault(parent or "/", set()).add(name)
        self._nodes[path] = node

    def _drop_node(self, path: str) -> None:
        if self._nodes.pop(path, None) is not None:
            parent, _, name = path.rpartition("/")
            siblings = self._kids.get(parent or "/")
            if siblings is not None:
                siblings.discard(name)
                if not siblings:
                    del self._kids[parent or "/"]

    def _fire(self, watches: dict[str, list[Watcher]], path: str, kind: EventType,
              event_path: str | None = None) -> None:
        self._fired.append(_Fired(watches, path, kind, event_path or path))

    def _do_create(self, session_id: int, op: Create, sequential: bool = False) -> str:
        check_path(op.path)
        parent = parent_of(op.path)
        parent_node = self._nodes.get(parent)
        if parent_node is None:
            raise NoNodeError(parent)
        if parent_node.owner:
            raise NoNodeError(f"{parent} is ephemeral and cannot have children")
        path = op.path
        if sequential:
            self._touch(parent)
            parent_node = self._nodes[parent]
            path = f"{op.path}{parent_node.sequence:010d}"
            parent_node.sequence += 1
        if path in self._nodes:
            raise NodeExistsError(path)
        self._touch(path)
        self._last_zxid += 1
        self._put_node(path, Node(op.data, self._last_zxid, session_id if op.ephemeral else 0))
        self._fire(self._data_watches, path, EventType.CREATED)
        self._fire(self._child_watches, parent, EventType.CHILD)
        return path

    def _do_set(self, op: SetData) -> Stat:
        node = self._node(op.path)
        if op.version != ANY_VERSION and op.version != node.version:
            raise BadVersionError(f"{op.path}: version {op.version}, node has {node.version}")
        self._touch(op.path)
        node.data = op.data
        node.version += 1
        self._fire(self._data_watches, op.path, EventType.CHANGED)
        return node.stat()

    def _do_check(self, op: Check) -> None:
        node = self._node(op.path)
        if op.version != ANY_VERSION and op.version != node.version:
            raise BadVersionError(f"{op.path}: version {op.version}, node has {node.version}")

    def _do_delete(self, op: Delete) -> None:
        node = self._node(op.path)
        if op.version != ANY_VERSION and op.version != node.version:
            raise BadVersionError(f"{op.path}: version {op.version}, node has {node.version}")
        if self._children(op.path):
            raise NotEmptyError(op.path)
        self._remove(op.path)

    def _remove(self, path: str) -> None:
        self._touch(path)
        self._drop_node(path)
        self._fire(self._data_watches, path, EventType.DELETED)
        self._fire(self._child_watches, path, EventType.DELETED)
        self._fire(self._child_watches, parent_of(path), EventType.CHILD)

    def _apply(self, session_id: int, op: Op) -> None:
        if isinstance(op, Create):
            self._do_create(session_id, op)
        elif isinstance(op, SetData):
            self._do_set(op)
        elif isinstance(op, Check):
            self._do_check(op)
        else:
            self._do_delete(op)


def deliver(events: Events) -> None:
    for watcher, event in events:
        watcher(event)


class MemoryCoordination(Coordination):
    calls_block = False
    """Every call is answered at once, in memory."""

    def __init__(self, ensemble: MemoryEnsemble, session_id: int) -> None:
        self._ensemble = ensemble
        self._session_id = session_id
        self.lost_while_paused: list[Callable[[], None]] = []

    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def connected(self) -> bool:
        session = self._ensemble._sessions[self._session_id]
        return session.alive and not session.paused

    def _run(self, action: Callable[[], T]) -> T:
        """``action`` as one transaction; its watches fire once it succeeded."""
        result, events = self._ensemble._call(self._session_id, action)
        deliver(events)
        return result

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequential: bool = False, makepath: bool = False) -> str:
        ensemble = self._ensemble

        def action() -> str:
            if makepath:
                parts = path.strip("/").split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    ancestor = "/" + "/".join(parts[:i])
                    if ancestor not in ensemble._nodes:
                        ensemble._do_create(0, Create(ancestor))
            return ensemble._do_create(self._session_id, Create(path, data, ephemeral),
                                       sequential)
        return self._run(action)

    def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]:
        ensemble = self._ensemble

        def action() -> tuple[bytes, Stat]:
            node = ensemble._node(path)
            if watch is not None:
                ensemble._data_watches.setdefault(path, []).append(watch)
            return node.data, node.stat()
        return self._run(action)

    def exists(self, path: str, watch: Watcher | None = None) -> Stat | None:
        ensemble = self._ensemble

        def action() -> Stat | None:
            check_path(path)
            if watch is not None:
                ensemble._data_watches.setdefault(path, []).append(watch)
            node = ensemble._nodes.get(path)
            return None if node is None else node.stat()
        return self._run(action)

    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        ensemble = self._ensemble

        def action() -> list[str]:
            ensemble._node(path)
            if watch is not None:
                ensemble._child_watches.setdefault(path, []).append(watch)
            return ensemble._children(path)
        return self._run(action)

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        return self._run(lambda: self._ensemble._do_set(SetData(path, data, version)))

    def delete(self, path: str, version: int = ANY_VERSION, *, recursive: bool = False) -> None:
        ensemble = self._ensemble

        def action() -> None:
            if recursive:
                for child in ensemble._children(path):
                    self._delete_tree(f"{path.rstrip('/')}/{child}")
            ensemble._do_delete(Delete(path, version))
        self._run(action)

    def _delete_tree(self, path: str) -> None:
        for child in self._ensemble._children(path):
            self._delete_tree(f"{path}/{child}")
        self._ensemble._do_delete(Delete(path))

    def commit(self, ops: Sequence[Op]) -> None:
        """One transaction: a failed op puts back what the ops before it changed."""
        ensemble = self._ensemble

        def action() -> None:
            for op in ops:
                ensemble._apply(self._session_id, op)
        self._run(action)

    def on_session_lost(self, callback: Callable[[], None]) -> None:
        self._ensemble._sessions[self._session_id].lost_callbacks.append(callback)

    def resume(self) -> None:
        """Back from a pause: if the session expired meanwhile, hear about it now (as a
        ZooKeeper client does on reconnecting)."""
        self._ensemble.resume(self._session_id)
        lost, self.lost_while_paused = self.lost_while_paused, []
        for callback in lost:
            callback()

    def pause(self) -> None:
        self._ensemble.pause(self._session_id)

    def close(self) -> None:
        if self._ensemble.session_alive(self._session_id):
            session = self._ensemble._sessions[self._session_id]
            session.lost_callbacks = []
            session.paused = False
            self._ensemble.expire(self._session_id)
