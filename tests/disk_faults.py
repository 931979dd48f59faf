"""A ``pwrite`` that behaves like a disk filling up: short writes, then ENOSPC."""

from __future__ import annotations

import errno
import os


class FillingDisk:
    """Lets ``room`` more bytes through (the last write that crosses it is cut short),
    then fails every write with ENOSPC. ``chunk`` caps each call, so large writes come
    back short even while there is room (as a real ``pwrite`` may)."""

    def __init__(self, room: int = 1 << 62, chunk: int = 1 << 62) -> None:
        self.room = room
        self.chunk = chunk
        self.calls = 0
        self.refused = 0

    def __call__(self, fd: int, data: bytes | bytearray | memoryview, position: int) -> int:
        self.calls += 1
        if self.room <= 0:
            self.refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        count = min(len(data), self.room, self.chunk)
        written = os.pwrite(fd, memoryview(data)[:count], position)
        self.room -= written
        return written
