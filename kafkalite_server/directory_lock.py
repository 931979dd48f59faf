"""One process at a time in a directory: an exclusive ``flock`` on its ``.lock`` file.

A broker holds one on each log dir (two brokers must never share one) and one on its
coordination store's directory (a second broker, or ``kafkalite-server scram-user``, must
not write beside it). The lock goes with the process, however it ends.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"


def try_lock_directory(directory: Path) -> int | None:
    """The descriptor holding the lock (closing it releases the lock), or None when another
    process holds it."""
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
