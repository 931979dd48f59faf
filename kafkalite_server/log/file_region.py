"""A byte range of a segment file, handed to the network layer for ``sendfile``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafkalite_server.log.open_files import FileHandle


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes of ``file`` from ``position``: whole record batches of one log.

    The region holds its own :class:`FileHandle`: the descriptor stays open while the
    region is alive, even when the cache of open files evicts it or the segment is
    deleted meanwhile, so a response being written always reads the bytes it was built
    from.
    """

    file: FileHandle
    position: int
    length: int

    def __len__(self) -> int:
        return self.length

    def fileno(self) -> int:
        return self.file.fileno()

    def read_bytes(self) -> bytes:
        """The bytes themselves, for tests and for transports without ``sendfile``."""
        return os.pread(self.file.fileno(), self.length, self.position)

    def read_range(self, offset: int, size: int) -> bytes:
        """``size`` bytes from ``offset`` within the region (down-conversion reads an
        entry at a time)."""
        return os.pread(self.file.fileno(), min(size, self.length - offset),
                        self.position + offset)
