"""Producer id allocation for idempotent producers, persisted across restarts.

Ids are reserved in blocks: the file ``producer-id-block`` holds the first id of the next
block, written (atomically) before any id of the current block is handed out, so a crash
never reissues an id; at most one block is skipped. A failed write (a full disk) raises
KafkaStorageError naming the file and hands out nothing: the block is not reserved.
"""

from __future__ import annotations

from pathlib import Path

from kafkalite_server.cluster.image import FileWriter, MetadataFileError, write_atomically

PRODUCER_ID_FILE = "producer-id-block"
BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, directory: Path, block_size: int = BLOCK_SIZE) -> None:
        self.path = directory / PRODUCER_ID_FILE
        self.block_size = block_size
        self.write: FileWriter = write_atomically
        self._next = 0
        self._block_end = 0
        if self.path.exists():
            text = self.path.read_text(encoding="ascii").strip()
            if not text.isdigit():
                raise MetadataFileError(f"{self.path}: {text!r} is not a producer id")
            self._next = self._block_end = int(text)

    def allocate(self) -> int:
        if self._next >= self._block_end:
            block_end = self._next + self.block_size
            self.write(self.path, f"{block_end}\n".encode("ascii"))
            self._block_end = block_end
        producer_id = self._next
        self._next += 1
        return producer_id
