"""A byte range of a segment file, handed to the network layer for ``sendfile``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes of ``file`` from ``position``: whole record batches of one log.

    The file object stays open while the segment lives, and for ``file.delete.delay.ms``
    after the segment is deleted, so a region stays readable while a response is written.
    """

    file: BinaryIO
    position: int
    length: int

    def __len__(self) -> int:
        return self.length

    def fileno(self) -> int:
        return self.file.fileno()

    def read_bytes(self) -> bytes:
        """The bytes themselves, for tests and for transports without ``sendfile``."""
        return os.pread(self.file.fileno(), self.length, self.position)
