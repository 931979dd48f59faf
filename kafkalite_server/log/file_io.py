"""Positioned writes that complete or fail, with the write call injectable for tests.

``os.pwrite`` may write fewer bytes than asked (a disk filling up mid-write); a log that
ignored the count would acknowledge a batch that is only partly on disk. Every log file
write goes through :func:`write_fully`, which loops on short writes and turns a write that
makes no progress into ``ENOSPC``. A :data:`Pwrite` other than ``os.pwrite`` lets tests
simulate a full disk without one.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

Pwrite = Callable[[int, bytes | bytearray | memoryview, int], int]
"""``os.pwrite``'s shape: (fd, data, position) -> bytes written."""


def write_fully(pwrite: Pwrite, fd: int, data: bytes | bytearray | memoryview,
                position: int) -> None:
    """Write all of ``data`` at ``position`` or raise OSError (the caller rolls back)."""
    view = memoryview(data).cast("B")
    written = 0
    while written < len(view):
        count = pwrite(fd, view[written:], position + written)
        if count <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written += count


def fsync_directory(directory: Path) -> None:
    """Make renames and creations inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
