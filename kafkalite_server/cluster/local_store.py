"""The coordination interface in one process, durable: a standalone broker's cluster store.

A standalone broker is a one-broker cluster: it registers, wins the election alone and
runs the same controller as a broker of a ZooKeeper cluster, over this store. The store is
the in-memory ensemble (:mod:`memory_store`: sessions, ephemeral nodes, one-shot watches,
versioned conditional writes, atomic batches, sequential nodes) with every change to a
persistent node on disk before the call that made it returns. Ephemeral nodes (a broker's
registration, ``/controller``) live only as long as their session, and never survive a
restart, as in ZooKeeper.

Files, in the store's directory:

- ``journal-<n>``: one entry per call that changed a persistent node, appended and
  fsynced before the call returns. An entry is ``[length: 4 bytes][CRC-32: 4 bytes]
  [JSON]``, the JSON being ``{"z": last czxid, "put": {path: node}, "del": [path, ...]}``:
  the call's resulting nodes, so replaying an entry needs no decision. A crash in the
  middle of an append leaves a torn last entry: its length or CRC does not match, and it
  is dropped (the file truncated there) when the store opens; it was never acknowledged.
- ``snapshot``: every persistent node, the last czxid and the number ``n`` of the journal
  that continues it, written atomically (temp file, fsync, rename, directory fsync). When
  a journal passes :data:`COMPACT_BYTES` the store starts ``journal-<n+1>`` (created and
  fsynced empty), writes a snapshot naming it, and only then deletes ``journal-<n>``: a
  crash at any point leaves a snapshot and the journal it names. A compaction that fails
  once its snapshot may be renamed (its directory fsync failed) leaves the changes since
  in ``journal-<n>``, so the store opens by replaying the journal before the named one
  too, when there is one, in order (entries hold whole nodes, so replaying ones the
  snapshot already has changes nothing in the end: the last entry for a node wins, as
  when it was written), and folds both into a new snapshot.
- ``.lock``: held (``flock``) while a process has the store open; a second process (a
  second broker on this data dir, or ``kafkalite-server scram-user`` while the broker
  runs) is refused with :class:`LocalStoreInUseError`.

Creation ids (czxid, a broker's epoch is its registration's) stay monotonic across
restarts: every entry records the last one handed out, an ephemeral node's creation too.

Calls run on the broker's coordination worker thread (:attr:`LocalCoordination.calls_block`:
they wait for the disk), never on its event loop; a lock makes each call one transaction
against other threads. Watch callbacks run on the calling thread once the call's change is
durable, as the in-memory store delivers them. A write that fails (a full disk) raises
KafkaStorageError naming the journal and changes nothing: the entry is cut off the file and
the call undone in memory.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.cluster.atomic_file import fsync_directory, write_atomically
from kafkalite_server.cluster.coordination import CoordinationError
from kafkalite_server.cluster.memory_store import (
    Events,
    MemoryCoordination,
    MemoryEnsemble,
    Node,
)
from kafkalite_server.directory_lock import try_lock_directory
from kafkalite_server.log.log import wall_clock_ms

log = logging.getLogger(__name__)

T = TypeVar("T")
SNAPSHOT_FILE = "snapshot"
JOURNAL_PREFIX = "journal-"
COMPACT_BYTES = 8 * 1024 * 1024
"""A journal this long is folded into a new snapshot."""
_FRAME = struct.Struct(">II")
_FORMAT_VERSION = 1


class LocalStoreInUseError(CoordinationError):
    """Another process has the store open."""


class LocalStoreError(KafkaStorageError):
    """The store's files cannot be read: they are not what this store writes."""


def journal_name(number: int) -> str:
    return f"{JOURNAL_PREFIX}{number}"


class Journal:
    """An append-only file of framed entries (length + CRC-32 + payload)."""

    def __init__(self, path: Path, fsync: Callable[[int], None]) -> None:
        """Opens ``path`` for appending (created, and made durable, if missing);
        KafkaStorageError naming it if that fails."""
        self.path = path
        self._fsync = fsync
        created = not path.exists()
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise KafkaStorageError(f"cannot open {path}: {exc.strerror or exc}") from exc
        try:
            self.size = os.fstat(self._fd).st_size
            if created:
                fsync(self._fd)
                fsync_directory(path.parent, fsync)
        except OSError as exc:
            os.close(self._fd)
            raise KafkaStorageError(f"cannot create {path}: {exc.strerror or exc}") from exc

    @staticmethod
    def read(path: Path) -> tuple[list[bytes], int]:
        """The payloads of the whole entries, and the length they span; a torn or damaged
        entry ends the journal (what follows it was never acknowledged)."""
        data = path.read_bytes() if path.exists() else b""
        payloads: list[bytes] = []
        position = 0
        while position + _FRAME.size <= len(data):
            length, crc = _FRAME.unpack_from(data, position)
            start = position + _FRAME.size
            payload = data[start:start + length]
            if len(payload) != length or zlib.crc32(payload) != crc:
                break
            payloads.append(payload)
            position = start + length
        return payloads, position

    def append(self, payload: bytes) -> None:
        """Durable when this returns; on failure the file is as it was (KafkaStorageError
        naming it)."""
        frame = _FRAME.pack(len(payload), zlib.crc32(payload)) + payload
        try:
            written = os.write(self._fd, frame)
            if written != len(frame):
                raise OSError(f"wrote {written} of {len(frame)} bytes")
            self._fsync(self._fd)
        except OSError as exc:
            self._cut_back()
            raise KafkaStorageError(
                f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self.size += len(frame)

    def _cut_back(self) -> None:
        """Removes whatever part of a failed append reached the file. If the cut itself
        cannot be synced, a crash may still bring the failed entry back: the outcome of a
        failed write is unknown, as with a ZooKeeper connection lost mid-call."""
        try:
            os.ftruncate(self._fd, self.size)
        except OSError as exc:
            log.error("%s: a failed append could not be cut off (%s); it may reappear "
                      "after a restart", self.path, exc)
            return
        with contextlib.suppress(OSError):
            self._fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


class LocalEnsemble(MemoryEnsemble):
    """The in-memory ensemble, durable in ``directory``; open with :meth:`open`."""

    def __init__(self, directory: Path, clock: Callable[[], int] = wall_clock_ms, *,
                 fsync: Callable[[int], None] = os.fsync,
                 compact_bytes: int = COMPACT_BYTES) -> None:
        super().__init__(clock)
        self.directory = directory
        self.fsync = fsync
        """How the store's files are synced (tests swap in one that fails as a full disk
        does)."""
        self._compact_bytes = compact_bytes
        self._compact_at = compact_bytes
        """The journal size that starts the next compaction (later after a failed one)."""
        self._lock = threading.RLock()
        self._durable_zxid = 0
        self._journal_number = 0
        self._journal: Journal | None = None
        self._lock_fd: int | None = None

    @classmethod
    def open(cls, directory: Path, *, fsync: Callable[[int], None] = os.fsync,
             compact_bytes: int = COMPACT_BYTES) -> LocalEnsemble:
        """Locks the directory (created if missing), reads the snapshot and replays its
        journal, cutting off a torn tail."""
        directory.mkdir(parents=True, exist_ok=True)
        ensemble = cls(directory, fsync=fsync, compact_bytes=compact_bytes)
        ensemble._lock_fd = _lock(directory)
        try:
            ensemble._recover()
        except BaseException:
            ensemble.close()
            raise
        return ensemble

    @property
    def empty(self) -> bool:
        """Nothing was ever written to this store."""
        return self._last_zxid == 0

    def connect(self, session_timeout_ms: int = 18_000) -> MemoryCoordination:
        with self._lock:
            return super().connect(session_timeout_ms)

    def _new_client(self, session_id: int) -> LocalCoordination:
        return LocalCoordination(self, session_id)

    def close(self) -> None:
        """Ends every session (their ephemeral nodes go) and releases the files."""
        with self._lock:
            for session_id in list(self._sessions):
                session = self._sessions[session_id]
                session.lost_callbacks = []
                session.paused = False
                self.expire(session_id)
            if self._journal is not None:
                self._journal.close()
                self._journal = None
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    # ------------------------------------------------------------------ transactions

    def _call(self, session_id: int, action: Callable[[], T]) -> tuple[T, Events]:
        with self._lock:
            return super()._call(session_id, action)

    def _transaction(self, action: Callable[[], T]) -> tuple[T, Events]:
        with self._lock:
            return super()._transaction(action)

    def expire(self, session_id: int) -> None:
        with self._lock:
            super().expire(session_id)

    def _persist(self, originals: dict[str, Node | None]) -> None:
        """Appends the call's persistent changes (and any czxid it handed out) to the
        journal; raising undoes the call."""
        if self._journal is None:
            raise KafkaStorageError(f"the coordination store in {self.directory} is closed")
        put: dict[str, list[Any]] = {}
        deleted: list[str] = []
        for path, original in originals.items():
            node = self._nodes.get(path)
            if node is not None and not node.owner:
                put[path] = node.encode()
            elif node is None and original is not None and not original.owner:
                deleted.append(path)
        if not put and not deleted and self._last_zxid == self._durable_zxid:
            return  # an ephemeral node went: nothing persistent changed
        entry = {"z": self._last_zxid, "put": put, "del": deleted}
        self._journal.append(json.dumps(entry, separators=(",", ":")).encode())
        self._durable_zxid = self._last_zxid
        if self._journal.size >= self._compact_at:
            self._compact()  # never raises: the call's change is durable already

    # ------------------------------------------------------------------ files

    def _sync(self, fd: int) -> None:
        self.fsync(fd)

    def _recover(self) -> None:
        snapshot = self.directory / SNAPSHOT_FILE
        if snapshot.exists():
            try:
                document = json.loads(snapshot.read_bytes())
                if document["version"] != _FORMAT_VERSION:
                    raise ValueError(f"format version {document['version']!r}")
                self._load_nodes(document["nodes"])
                self._last_zxid = max(self._last_zxid, int(document["zxid"]))
                self._journal_number = int(document["journal"])
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                raise LocalStoreError(f"{snapshot}: not a coordination store snapshot "
                                      f"({exc!r})") from None
        # A compaction that failed after its snapshot's rename left the changes since in
        # the journal before the one the snapshot names: replay both, in order.
        replayed = [number for number in (self._journal_number - 1, self._journal_number)
                    if number >= 0 and (self.directory / journal_name(number)).exists()]
        for number in replayed:
            self._replay_journal(self.directory / journal_name(number))
        self._remove_journals(keep=set(replayed) | {self._journal_number})
        self._durable_zxid = self._last_zxid
        self._journal = Journal(self.directory / journal_name(self._journal_number),
                                self._sync)
        if self._journal_number - 1 in replayed or self._journal.size >= self._compact_at:
            self._compact()

    def _replay_journal(self, path: Path) -> None:
        payloads, valid = Journal.read(path)
        for index, payload in enumerate(payloads):
            try:
                self._replay(json.loads(payload))
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                raise LocalStoreError(f"{path}: entry {index} is not a journal entry "
                                      f"({exc!r})") from None
        if path.stat().st_size > valid:
            log.warning("%s: dropping %d bytes after the last whole entry (a write cut "
                        "short by a crash, never acknowledged)", path,
                        path.stat().st_size - valid)
            with open(path, "r+b") as torn:
                torn.truncate(valid)
                self._sync(torn.fileno())

    def _replay(self, entry: dict[str, Any]) -> None:
        for path in entry["del"]:
            self._drop_node(path)
        self._load_nodes(entry["put"])
        self._last_zxid = max(self._last_zxid, int(entry["z"]))

    def _remove_journals(self, keep: set[int]) -> None:
        """Journals a crash or a compaction left behind, already in the snapshot."""
        for path in self.directory.glob(f"{JOURNAL_PREFIX}*"):
            number = path.name[len(JOURNAL_PREFIX):]
            if not number.isdigit() or int(number) not in keep:
                with contextlib.suppress(OSError):
                    path.unlink()

    def _compact(self) -> None:
        """Folds the journal into a new snapshot (see the module docstring for the order).
        A compaction that fails (a full disk) changes nothing: the journal goes on, and the
        next attempt waits until it has grown by another :data:`COMPACT_BYTES`."""
        assert self._journal is not None
        old = self._journal
        number = self._journal_number + 1
        fresh_path = self.directory / journal_name(number)
        document = {"version": _FORMAT_VERSION, "zxid": self._last_zxid, "journal": number,
                    "nodes": {path: node.encode() for path, node in self.persistent_nodes()}}
        try:
            fresh = Journal(fresh_path, self._sync)
            try:
                write_atomically(self.directory / SNAPSHOT_FILE,
                                 json.dumps(document, separators=(",", ":")).encode(),
                                 fsync=self._sync)
            except KafkaStorageError:
                fresh.close()
                raise
        except KafkaStorageError as exc:
            # The snapshot may have been renamed before the failure: the journal goes on
            # where it was, and a restart replays it (see _recover).
            with contextlib.suppress(OSError):
                fresh_path.unlink(missing_ok=True)
            self._compact_at = old.size + self._compact_bytes
            log.warning("%s: compaction postponed: %s", self.directory, exc)
            return
        self._journal, self._journal_number = fresh, number
        self._compact_at = self._compact_bytes
        old.close()
        self._remove_journals(keep={number})


def _lock(directory: Path) -> int:
    fd = try_lock_directory(directory)
    if fd is None:
        raise LocalStoreInUseError(
            f"the coordination store in {directory} is open in another process (a broker "
            "running on this data dir?)")
    return fd


class LocalCoordination(MemoryCoordination):
    calls_block = True
    """A write waits for the disk (fsync): brokers make their calls off the event loop."""

    def __init__(self, ensemble: LocalEnsemble, session_id: int) -> None:
        super().__init__(ensemble, session_id)
        self.ensemble = ensemble
        """The store this session is on."""
