"""Producer ids for idempotent producers: allocation persisted across restarts, and epoch bumps.

Ids are reserved in blocks: the file ``producer-id-block`` holds the first id of the next
block, written (atomically) before any id of the current block is handed out, so a crash
never reissues an id; at most one block is skipped. A failed write (a full disk) raises
KafkaStorageError naming the file and hands out nothing: the block is not reserved.

Epoch bumps (KIP-360, InitProducerId v3+ naming the producer's current id and epoch) are how
an idempotent producer whose sequence state became unknown (a batch failed after it may or
may not have been written) starts over: the same id with epoch + 1, every partition's
sequence back at 0. :class:`ProducerEpochs` keys them by (producer id, epoch) as Kafka's
transaction coordinator does: the current epoch is bumped; the previous one gets the
current answer again (a retry whose answer was lost); any other is fenced. When the epoch is
exhausted the producer gets a new id with epoch 0. Only bumped ids are remembered, at most
:data:`EPOCHS_KEPT` of them (least recently bumped forgotten first), in memory: an id not
remembered (never bumped, forgotten, or from before a restart) is taken at the epoch the
producer names.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from kafkalite.protocol.errors import InvalidRequestError, ProducerFencedError
from kafkalite_server.cluster.image import FileWriter, MetadataFileError, write_atomically

PRODUCER_ID_FILE = "producer-id-block"
BLOCK_SIZE = 1000
EPOCHS_KEPT = 10_000
LAST_EPOCH = 2**15 - 2
"""An epoch at or above this cannot be bumped (Kafka's ``isEpochExhausted``): new id."""


class ProducerIdAllocator:
    def __init__(self, directory: Path, block_size: int = BLOCK_SIZE) -> None:
        self.path = directory / PRODUCER_ID_FILE
        self.block_size = block_size
        self.write: FileWriter = write_atomically
        self._next = 0
        self._block_end = 0
        self.epochs = ProducerEpochs(self)
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


@dataclass(slots=True)
class _Bumped:
    epoch: int
    previous_epoch: int
    successor: tuple[int, int] | None = None
    """The new (id, epoch) this id's exhausted epoch was replaced by."""


class ProducerEpochs:
    """Epoch bumps of idempotent producers; see the module docstring."""

    def __init__(self, allocator: ProducerIdAllocator, capacity: int = EPOCHS_KEPT) -> None:
        self._allocator = allocator
        self._capacity = capacity
        self._bumped: OrderedDict[int, _Bumped] = OrderedDict()

    def bump(self, producer_id: int, epoch: int) -> tuple[int, int]:
        """The producer's next (id, epoch); raises ProducerFencedError for a stale epoch."""
        if producer_id < 0 or not 0 <= epoch <= 2**15 - 1:
            raise InvalidRequestError(f"producer id {producer_id} epoch {epoch} is not an "
                                      "identity a producer can have")
        entry = self._bumped.get(producer_id)
        if entry is None:
            entry = _Bumped(epoch, -1)
        elif entry.successor is not None:
            if epoch == entry.epoch:
                return entry.successor
            raise ProducerFencedError(self._fenced(producer_id, epoch, entry))
        elif epoch == entry.previous_epoch:
            return producer_id, entry.epoch
        elif epoch != entry.epoch:
            raise ProducerFencedError(self._fenced(producer_id, epoch, entry))
        if epoch >= LAST_EPOCH:
            entry.successor = (self._allocator.allocate(), 0)
            result = entry.successor
        else:
            entry.previous_epoch, entry.epoch = epoch, epoch + 1
            result = (producer_id, entry.epoch)
        self._remember(producer_id, entry)
        return result

    def _remember(self, producer_id: int, entry: _Bumped) -> None:
        self._bumped[producer_id] = entry
        self._bumped.move_to_end(producer_id)
        while len(self._bumped) > self._capacity:
            self._bumped.popitem(last=False)

    @staticmethod
    def _fenced(producer_id: int, epoch: int, entry: _Bumped) -> str:
        return (f"producer {producer_id} epoch {epoch} is stale: the current epoch is "
                f"{entry.epoch}" + (" (the id was replaced)" if entry.successor else ""))
