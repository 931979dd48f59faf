"""The coordination interface in memory: ZooKeeper's semantics without a server.

A :class:`MemoryEnsemble` holds the node tree, the sessions and a clock (wall clock, or a
controllable one in tests). Each :meth:`MemoryEnsemble.connect` opens a session. A session
stays alive while its client is not paused; a paused client (a broker frozen by a long GC
pause or cut off by a partition) is expired once ``session_timeout_ms`` passes on the clock
without it, at the next :meth:`MemoryEnsemble.tick`, and :meth:`MemoryEnsemble.expire`
expires one at once. Expiry deletes the session's ephemeral nodes, fires their watches and
tells the client (``on_session_lost``); later calls through it raise SessionExpiredError.
:meth:`MemoryEnsemble.snapshot` and :meth:`MemoryEnsemble.restored` carry the persistent
nodes (data and version) over a restart, as ZooKeeper's own snapshot does; sessions and
ephemeral nodes never survive one.

Single-threaded: use one ensemble from one thread (EmbeddedCluster's loop).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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


@dataclass
class _Node:
    data: bytes
    creation_id: int
    owner: int = 0
    version: int = 0
    sequence: int = 0


@dataclass
class _Session:
    session_id: int
    timeout_ms: int
    last_seen_ms: int
    client: MemoryCoordination
    paused: bool = False
    alive: bool = True
    lost_callbacks: list[Callable[[], None]] = field(default_factory=list)


class MemoryEnsemble:
    def __init__(self, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.clock = clock
        self._nodes: dict[str, _Node] = {"/": _Node(b"", 0)}
        self._sessions: dict[int, _Session] = {}
        self._ids = itertools.count(1)
        self._zxid = itertools.count(1)
        self._data_watches: dict[str, list[Watcher]] = {}
        self._child_watches: dict[str, list[Watcher]] = {}
        self._pending: list[tuple[Watcher, WatchEvent]] = []

    def connect(self, session_timeout_ms: int = 18_000) -> MemoryCoordination:
        session_id = next(self._ids)
        client = MemoryCoordination(self, session_id)
        self._sessions[session_id] = _Session(session_id, session_timeout_ms, self.clock(),
                                              client)
        return client

    def snapshot(self) -> bytes:
        """The persistent nodes as JSON: ``{path: [data as latin-1 text, version, next
        sequence number of its sequential children]}``."""
        kept = {path: [node.data.decode("latin-1"), node.version, node.sequence]
                for path, node in self._nodes.items() if not node.owner and path != "/"}
        return json.dumps(kept, sort_keys=True).encode()

    @classmethod
    def restored(cls, snapshot: bytes, clock: Callable[[], int] = wall_clock_ms
                 ) -> MemoryEnsemble:
        """An ensemble holding the nodes of ``snapshot`` (parents sort before children)."""
        ensemble = cls(clock)
        for path, (data, version, sequence) in sorted(json.loads(snapshot).items()):
            ensemble._nodes[path] = _Node(data.encode("latin-1"), next(ensemble._zxid),
                                          version=version, sequence=sequence)
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
        for path in sorted((p for p, n in self._nodes.items() if n.owner == session_id),
                           reverse=True):
            self._remove(path)
        callbacks = session.lost_callbacks if not session.paused else []
        if session.paused:
            session.client.lost_while_paused = session.lost_callbacks
        self._flush()
        for callback in callbacks:
            callback()

    def owner_of(self, path: str) -> int:
        """The session owning an ephemeral node (0 if persistent); raises NoNodeError."""
        return self._node(path).owner

    def session_alive(self, session_id: int) -> bool:
        session = self._sessions.get(session_id)
        return session is not None and session.alive

    # ------------------------------------------------------------------ tree operations

    def _live(self, session_id: int) -> _Session:
        session = self._sessions[session_id]
        if not session.alive:
            raise SessionExpiredError(f"session {session_id:#x} has expired")
        if session.paused:
            raise SessionExpiredError(f"session {session_id:#x} cannot reach the ensemble")
        session.last_seen_ms = self.clock()
        return session

    def _node(self, path: str) -> _Node:
        check_path(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        return node

    def _children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted(p[len(prefix):] for p in self._nodes
                      if p.startswith(prefix) and "/" not in p[len(prefix):] and p != "/")

    def _fire(self, watches: dict[str, list[Watcher]], path: str, kind: EventType,
              event_path: str | None = None) -> None:
        for watcher in watches.pop(path, []):
            self._pending.append((watcher, WatchEvent(kind, event_path or path)))

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for watcher, event in pending:
            watcher(event)

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
            path = f"{op.path}{parent_node.sequence:010d}"
            parent_node.sequence += 1
        if path in self._nodes:
            raise NodeExistsError(path)
        self._nodes[path] = _Node(op.data, next(self._zxid),
                                  session_id if op.ephemeral else 0)
        self._fire(self._data_watches, path, EventType.CREATED)
        self._fire(self._child_watches, parent, EventType.CHILD)
        return path

    def _do_set(self, op: SetData) -> Stat:
        node = self._node(op.path)
        if op.version != ANY_VERSION and op.version != node.version:
            raise BadVersionError(f"{op.path}: version {op.version}, node has {node.version}")
        node.data = op.data
        node.version += 1
        self._fire(self._data_watches, op.path, EventType.CHANGED)
        return Stat(node.version, node.creation_id, node.owner)

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
        del self._nodes[path]
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

    def _run(self, action: Callable[[], object]) -> object:
        ensemble = self._ensemble
        ensemble._live(self._session_id)
        try:
            return action()
        finally:
            ensemble._flush()

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
        return str(self._run(action))

    def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]:
        ensemble = self._ensemble

        def action() -> tuple[bytes, Stat]:
            node = ensemble._node(path)
            if watch is not None:
                ensemble._data_watches.setdefault(path, []).append(watch)
            return node.data, Stat(node.version, node.creation_id, node.owner)
        return self._run(action)  # type: ignore[return-value]

    def exists(self, path: str, watch: Watcher | None = None) -> Stat | None:
        ensemble = self._ensemble

        def action() -> Stat | None:
            check_path(path)
            if watch is not None:
                ensemble._data_watches.setdefault(path, []).append(watch)
            node = ensemble._nodes.get(path)
            return None if node is None else Stat(node.version, node.creation_id, node.owner)
        return self._run(action)  # type: ignore[return-value]

    def children(self, path: str, watch: Watcher | None = None) -> list[str]:
        ensemble = self._ensemble

        def action() -> list[str]:
            ensemble._node(path)
            if watch is not None:
                ensemble._child_watches.setdefault(path, []).append(watch)
            return ensemble._children(path)
        return self._run(action)  # type: ignore[return-value]

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        return self._run(lambda: self._ensemble._do_set(SetData(path, data, version)))  # type: ignore[return-value]

    def delete(self, path: str, version: int = ANY_VERSION, *, recursive: bool = False) -> None:
        ensemble = self._ensemble

        def action() -> None:
            if recursive:
                for child in ensemble._children(path):
                    self_path = f"{path.rstrip('/')}/{child}"
                    self._delete_tree(self_path)
            ensemble._do_delete(Delete(path, version))
        self._run(action)

    def _delete_tree(self, path: str) -> None:
        for child in self._ensemble._children(path):
            self._delete_tree(f"{path}/{child}")
        self._ensemble._do_delete(Delete(path))

    def commit(self, ops: Sequence[Op]) -> None:
        """Validates against a copy of the tree first, so a failed batch changes nothing."""
        ensemble = self._ensemble

        def action() -> None:
            saved_nodes = {path: _Node(n.data, n.creation_id, n.owner, n.version, n.sequence)
                           for path, n in ensemble._nodes.items()}
            saved_pending = list(ensemble._pending)
            saved_watches = ({k: list(v) for k, v in ensemble._data_watches.items()},
                             {k: list(v) for k, v in ensemble._child_watches.items()})
            try:
                for op in ops:
                    ensemble._apply(self._session_id, op)
            except Exception:
                ensemble._nodes = saved_nodes
                ensemble._pending = saved_pending
                ensemble._data_watches, ensemble._child_watches = saved_watches
                raise
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
