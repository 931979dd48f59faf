"""Replacing a small file so that a crash leaves the old version or the new, never half.

The broker's small metadata files (``meta.properties``, the local coordination store's
snapshot, an EmbeddedCluster's saved nodes) are written this way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from kafkalite.protocol.errors import KafkaStorageError


def write_atomically(path: Path, data: bytes, *,
                     fsync: Callable[[int], None] = os.fsync) -> None:
    """Temp file + fsync + rename + directory fsync.

    A failure (a full disk) removes the temp file, keeps the old file and raises
    KafkaStorageError naming the file; callers change nothing in memory until this returns.
    Tests pass an ``fsync`` that fails the way a full disk does.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        try:
            with open(tmp, "wb") as out:
                out.write(data)
                out.flush()
                fsync(out.fileno())
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        fsync_directory(path.parent, fsync)
    except OSError as exc:
        raise KafkaStorageError(f"cannot write {path}: {exc.strerror or exc}") from exc


def fsync_directory(directory: Path, fsync: Callable[[int], None] = os.fsync) -> None:
    """Makes the directory's entries (a file created, renamed or removed) durable."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        fsync(dir_fd)
    finally:
        os.close(dir_fd)
