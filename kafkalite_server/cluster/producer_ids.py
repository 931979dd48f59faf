"""Producer ids for idempotent producers: blocks claimed cluster-wide, and epoch bumps.

Ids come in blocks of :data:`BLOCK_SIZE` claimed from ``/latest_producer_id_block`` by a
conditional write (Kafka's ZooKeeper-mode ProducerIdManager), so they are unique across the
cluster and across restarts: a block is durable in the coordination store before any of its
ids is handed out, and a claimed block is never reissued (at most the rest of one is
skipped by a restart).

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    InvalidRequestError,
    ProducerFencedError,
)
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.coordination import (
    BadVersionError,
    Coordination,
    NodeExistsError,
    NoNodeError,
)
from kafkalite_server.cluster.store_worker import StoreWorker

BLOCK_SIZE = 1000
EPOCHS_KEPT = 10_000
LAST_EPOCH = 2**15 - 2
"""An epoch at or above this cannot be bumped (Kafka's ``isEpochExhausted``): new id."""
_CLAIM_ATTEMPTS = 10


class Allocator(Protocol):
    def allocate(self) -> int: ...


class ProducerIdBlocks:
    """Blocks of producer ids claimed cluster-wide; a claimed block is never reissued.

    The first block is claimed at start; the next one in the background once half of the
    current one is handed out, so :meth:`allocate` never waits for the store. If the
    next block is not there yet when the current one runs out, InitProducerId answers
    COORDINATOR_LOAD_IN_PROGRESS, which producers retry (Kafka's controller-side id
    manager does the same)."""

    def __init__(self, broker_id: int, store: Callable[[], Coordination],
                 worker: StoreWorker) -> None:
        self.broker_id = broker_id
        self._store = store
        self._worker = worker
        self._next, self._end = self._claim_block()
        self._spare: tuple[int, int] | None = None
        self._claiming = False
        self.epochs = ProducerEpochs(self)

    def allocate(self) -> int:
        if self._next >= self._end:
            if self._spare is None:
                self._claim_spare()
                raise CoordinatorLoadInProgressError(
                    "the next block of producer ids is being claimed; retry")
            (self._next, self._end), self._spare = self._spare, None
        producer_id = self._next
        self._next += 1
        if self._end - self._next < BLOCK_SIZE // 2:
            self._claim_spare()
        return producer_id

    def _claim_spare(self) -> None:
        if self._spare is not None or self._claiming:
            return
        self._claiming = True

        def claim() -> None:
            try:
                self._spare = self._claim_block()
            finally:
                self._claiming = False
        self._worker.submit(claim)

    def _claim_block(self) -> tuple[int, int]:
        store = self._store()
        for _attempt in range(_CLAIM_ATTEMPTS):
            try:
                data, stat = store.get(layout.PRODUCER_ID_BLOCK)
            except NoNodeError:
                start = 0
                try:
                    store.create(layout.PRODUCER_ID_BLOCK, layout.encode_producer_id_block(
                        self.broker_id, start, start + BLOCK_SIZE - 1))
                    return start, start + BLOCK_SIZE
                except NodeExistsError:
                    continue
            start = layout.decode_producer_id_block(data) + 1
            try:
                store.set(layout.PRODUCER_ID_BLOCK, layout.encode_producer_id_block(
                    self.broker_id, start, start + BLOCK_SIZE - 1), stat.version)
                return start, start + BLOCK_SIZE
            except BadVersionError:
                continue
        raise BadVersionError(f"{layout.PRODUCER_ID_BLOCK}: too many concurrent claims")


@dataclass(slots=True)
class _Bumped:
    epoch: int
    previous_epoch: int
    successor: tuple[int, int] | None = None
    """The new (id, epoch) this id's exhausted epoch was replaced by."""


class ProducerEpochs:
    """Epoch bumps of idempotent producers; see the module docstring."""

    def __init__(self, allocator: Allocator, capacity: int = EPOCHS_KEPT) -> None:
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
