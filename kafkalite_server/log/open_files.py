"""The broker's open segment files: a bounded, least-recently-used cache of descriptors.

Kafka keeps one descriptor per segment for the broker's life, so its operators raise
``ulimit -n`` with the number of segments. kafkalite bounds them instead: every segment
file (``.log``, ``.index``, ``.timeindex``) is a :class:`CachedFile`, a path that is
opened when it is read or written and stays open in the :class:`OpenFileCache` until
``kafkalite.log.open.files.max`` other files have been used since. A broker then holds
the same few thousand descriptors whether it has a hundred segments or a million; the
price is an ``open`` when a cold segment is read again (a few microseconds).

An evicted descriptor is not closed under its users: the cache hands out
:class:`FileHandle` objects, and a handle closes its descriptor when the last reference
to it goes (CPython frees it at once). A fetch's :class:`FileRegion` holds its handle, so
a response being sent with ``sendfile`` keeps reading the file it was built from even
when the cache has moved on, or the segment was deleted meanwhile. Code that uses a
descriptor keeps the handle in a variable for as long as it uses the number.

Running out of descriptors (``EMFILE``/``ENFILE``: sockets, other files) is not a disk
failure: the cache gives back half of its own descriptors and tries once more, and if
that fails too, raises :class:`TooManyOpenFilesError`, which names the limits and fails
the one request that needed the file (Kafka's broker, by contrast, takes the log dir
offline).
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from kafkalite.protocol.errors import KafkaStorageError

Opener = Callable[[str, int], int]
"""``os.open``'s shape for the cache: (path, flags) -> descriptor. Tests inject failures."""

OPEN_FILES_MAX_AUTO = -1
"""``kafkalite.log.open.files.max`` default: half of the process's soft RLIMIT_NOFILE."""
MIN_OPEN_FILES = 16
"""The smallest cache: a roll needs a segment's three files open at once, with room."""

_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})

logger = logging.getLogger(__name__)


def is_out_of_descriptors(exc: BaseException) -> bool:
    """Whether ``exc`` is the process or the system running out of file descriptors (a
    resource limit, not a failing disk)."""
    return isinstance(exc, OSError) and exc.errno in _OUT_OF_DESCRIPTORS


def open_files_limits() -> tuple[int, int]:
    """The process's (soft, hard) RLIMIT_NOFILE; ``resource.RLIM_INFINITY`` is -1."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit (as a broker should at start: the
    soft default, often 1024, is far below what connections and segments need) and log
    both; returns the (soft, hard) limits in force afterwards."""
    soft, hard = open_files_limits()
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (OSError, ValueError) as exc:
            logger.warning("cannot raise the open files limit from %d to %d: %s",
                           soft, hard, exc)
            return soft, hard
    logger.info("open files limit (RLIMIT_NOFILE): soft %s, hard %s (soft was %s)",
                _limit_text(hard), _limit_text(hard), _limit_text(soft))
    return open_files_limits()


def default_open_files_max() -> int:
    """Half of the soft RLIMIT_NOFILE (the rest is for connections and every other file),
    at least :data:`MIN_OPEN_FILES`; a large number when there is no limit."""
    soft, _hard = open_files_limits()
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 1 << 20
    return max(MIN_OPEN_FILES, soft // 2)


def _limit_text(limit: int) -> str:
    return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)


class TooManyOpenFilesError(KafkaStorageError):
    """The process has no descriptor left for a segment file: this request fails
    (KAFKA_STORAGE_ERROR, retriable), the log dir stays online."""


class FileHandle:
    """One open descriptor; closed by :meth:`close` or when the last reference goes.

    It is what :class:`FileRegion` hands to ``loop.sendfile``: asyncio needs
    ``fileno()`` and a binary ``mode``, and only ever passes explicit offsets.
    """

    __slots__ = ("_fd",)
    mode = "r+b"

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        if self._fd < 0:
            raise ValueError("I/O operation on a closed file handle")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


class OpenFileCache:
    """At most ``capacity`` descriptors of :class:`CachedFile` files, least recently used
    first out; thread-safe (the loop, the cleaner and flush threads share it)."""

    def __init__(self, capacity: int, *, opener: Opener = os.open) -> None:
        if capacity < 1:
            raise ValueError(f"an open file cache needs room for one file, not {capacity}")
        self.capacity = capacity
        self.opener = opener
        """Every segment file is opened through here (tests replace it)."""
        self._open: OrderedDict[CachedFile, FileHandle] = OrderedDict()
        self._lock = threading.Lock()
        self.opens = 0
        """How many times a descriptor was opened (misses), for tests and benchmarks."""

    def __len__(self) -> int:
        return len(self._open)

    def handle(self, file: CachedFile, flags: int) -> FileHandle:
        """``file``'s open handle, opening it with ``flags`` if it is not cached."""
        with self._lock:
            handle = self._open.get(file)
            if handle is not None:
                self._open.move_to_end(file)
                return handle
            while len(self._open) >= self.capacity:
                self._open.popitem(last=False)
            handle = FileHandle(self._open_fd(file.fspath, flags))
            self._open[file] = handle
            return handle

    def _open_fd(self, path: str, flags: int) -> int:
        try:
            fd = self.opener(path, flags)
        except OSError as exc:
            if not is_out_of_descriptors(exc):
                raise
            for _ in range(len(self._open) // 2 + 1):  # give back half of ours, once
                if not self._open:
                    break
                self._open.popitem(last=False)
            try:
                fd = self.opener(path, flags)
            except OSError as again:
                if not is_out_of_descriptors(again):
                    raise
                raise self.out_of_descriptors(path, again) from again
        self.opens += 1
        return fd

    def out_of_descriptors(self, path: str | Path, exc: OSError) -> TooManyOpenFilesError:
        """The error for ``exc`` (EMFILE/ENFILE) while opening ``path``, naming the limits."""
        soft, _hard = open_files_limits()
        return TooManyOpenFilesError(
            f"cannot open {path}: {exc.strerror or exc} (the process may hold "
            f"{_limit_text(soft)} descriptors, RLIMIT_NOFILE; segment files may hold "
            f"{self.capacity} of them, kafkalite.log.open.files.max)")

    def forget(self, file: CachedFile) -> None:
        """Drop ``file``'s descriptor from the cache (it closes once no region uses it)."""
        with self._lock:
            self._open.pop(file, None)

    def close_all(self) -> None:
        """Drop every descriptor (at shutdown)."""
        with self._lock:
            handles = list(self._open.values())
            self._open.clear()
        for handle in handles:
            handle.close()


def cache_or_private(files: OpenFileCache | None) -> OpenFileCache:
    """``files``, or a cache of its own for a log or segment opened outside a broker
    (tools and tests), sized as a broker's would be."""
    return files if files is not None else OpenFileCache(default_open_files_max())


_CREATE = os.O_RDWR | os.O_CREAT
_REOPEN = os.O_RDWR


class CachedFile:
    """A segment file opened on demand through an :class:`OpenFileCache`.

    ``create`` says whether the first open may create the file; later opens never do, so
    a file deleted behind the broker's back is an error, not a new empty file. Renames
    keep the cached descriptor (it follows the inode).
    """

    __slots__ = ("_cache", "_flags", "fspath")

    def __init__(self, cache: OpenFileCache, path: str | Path, *, create: bool) -> None:
        self._cache = cache
        self.fspath = os.fspath(path)
        """The path as text (a broker holds tens of thousands: no Path object each)."""
        self._flags = _CREATE if create else _REOPEN

    @property
    def path(self) -> Path:
        return Path(self.fspath)

    @path.setter
    def path(self, path: str | Path) -> None:
        self.fspath = os.fspath(path)

    def handle(self) -> FileHandle:
        """The open handle; keep it in a variable while using its descriptor."""
        handle = self._cache.handle(self, self._flags)
        self._flags = _REOPEN
        return handle

    def pread(self, size: int, position: int) -> bytes:
        handle = self.handle()
        return os.pread(handle.fileno(), size, position)

    def truncate(self, size: int) -> None:
        handle = self.handle()
        os.ftruncate(handle.fileno(), size)

    def fsync(self) -> None:
        handle = self.handle()
        os.fsync(handle.fileno())

    def size(self) -> int:
        handle = self.handle()
        return os.fstat(handle.fileno()).st_size

    def rename(self, path: str | Path) -> None:
        os.rename(self.fspath, path)
        self.fspath = os.fspath(path)

    def release(self) -> None:
        """Give the descriptor back to the cache's budget (the file stays on disk)."""
        self._cache.forget(self)

    def unlink(self) -> None:
        self.release()
        self.path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"CachedFile({self.path})"
