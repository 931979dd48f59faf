"""The transaction coordinator's decisions, sans-IO (Kafka's TransactionCoordinator plus
TransactionStateManager).

Each request is checked (ownership of the id's ``__transaction_state`` partition, producer
id and epoch), its transition looked up in :data:`~kafkalite_server.txn.state.TRANSITIONS`,
the new metadata written through :class:`TxnStore` and only then applied in memory, so
an answer never promises a state the log does not hold. Ending a transaction writes
PrepareCommit/PrepareAbort, asks the :class:`MarkerSender` for markers on every partition,
and writes CompleteCommit/CompleteAbort once :meth:`TransactionCoordinator.markers_written`
is called. The clock is injected; timers are the caller's (:meth:`abort_timed_out`,
:meth:`expire_idle`).

Fencing: a newer InitProducerId bumps the epoch; requests with the old epoch get
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for request versions before KIP-588). A request
naming another producer id gets INVALID_PRODUCER_ID_MAPPING.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkalite.errors import KafkaError
from kafkalite.protocol.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    ProducerFencedError,
    TransactionalIdNotFoundError,
)
from kafkalite.records import Record
from kafkalite_server.coordinator.errors import write_error
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.txn.config import TRANSACTION_STATE_TOPIC, TxnConfig
from kafkalite_server.txn.log_records import (
    TransactionLogFormatError,
    TxnLogValue,
    decode_key,
    decode_value,
)
from kafkalite_server.txn.metadata import TopicPartition, TxnMetadata
from kafkalite_server.txn.state import FENCE, RETRY_OK, Event, TxnState, transition

log = logging.getLogger(__name__)

LAST_EPOCH = 2**15 - 2
"""An epoch at or above this cannot be bumped: the id gets a new producer id."""


class TxnStore(Protocol):
    """Durable ``__transaction_state`` writes; raise a KafkaError when one fails."""

    def write(self, partition: int, transactional_id: str, value: TxnLogValue | None) -> None: ...


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]


class MarkerSender(Protocol):
    """Writes markers, then calls :meth:`TransactionCoordinator.markers_written`."""

    def send(self, request: MarkerRequest) -> None: ...


@dataclass(frozen=True, slots=True)
class InitResult:
    error: int
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, store: TxnStore, markers: MarkerSender,
                 allocate_producer_id: Callable[[], int], now_ms: Callable[[], int],
                 ownership: Ownership | None = None) -> None:
        """``ownership``: which ``__transaction_state`` partitions this broker coordinates,
        and at which coordinator epoch (the runtime's; a fresh one, owning nothing, by
        default)."""
        self.config = config
        self.ownership = ownership or Ownership(config.num_partitions)
        self._store = store
        self._markers = markers
        self._allocate = allocate_producer_id
        self._now_ms = now_ms
        self._txns: dict[str, TxnMetadata] = {}

    # ------------------------------------------------------------------ ownership

    def partition_for(self, transactional_id: str) -> int:
        return self.ownership.partition_for(transactional_id)

    def loader(self, partition: int) -> TxnLoader:
        return TxnLoader(self, partition)

    def install(self, partition: int, loaded: dict[str, TxnLogValue]) -> None:
        """Install the ids replayed from an owned partition's log; transactions caught
        between prepare and complete get their markers (again)."""
        for transactional_id, value in loaded.items():
            if self.partition_for(transactional_id) != partition:
                continue
            meta = TxnMetadata.from_log(transactional_id, value)
            self._txns[transactional_id] = meta
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._send_markers(meta)

    def unload(self, partition: int) -> None:
        for transactional_id in [t for t in self._txns if self.partition_for(t) == partition]:
            del self._txns[transactional_id]

    def topics_deleted(self, deleted: Callable[[str], bool], partition: int | None) -> None:
        """Nothing to do: like Kafka's, a transaction keeps the partitions it added (their
        markers end at UNKNOWN_TOPIC_OR_PARTITION)."""

    def _owner_error(self, transactional_id: str) -> int:
        if not transactional_id:
            return InvalidRequestError.errno
        return self.ownership.error_for(transactional_id)

    # ------------------------------------------------------------------ InitProducerId

    def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int = -1,
                         producer_epoch: int = -1, *, fenced_error: int) -> InitResult:
        error = self._owner_error(transactional_id)
        if error:
            return InitResult(error)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return InitResult(InvalidTransactionTimeoutError.errno)
        now = self._now_ms()
        meta = self._txns.get(transactional_id)
        if meta is None:
            fresh = TxnMetadata(transactional_id, self._allocate(), 0, timeout_ms,
                                TxnState.EMPTY, last_update_ms=now)
            error = self._write(fresh)
            if error:
                return InitResult(error)
            self._txns[transactional_id] = fresh
            return InitResult(0, fresh.producer_id, fresh.producer_epoch)
        if meta.markers_pending:
            return InitResult(ConcurrentTransactionsError.errno)
        if producer_id != -1:
            if (producer_id, producer_epoch) == (meta.producer_id, meta.last_producer_epoch) \
                    and meta.state is TxnState.EMPTY:
                return InitResult(0, meta.producer_id, meta.producer_epoch)  # a lost answer
            if (producer_id, producer_epoch) != (meta.producer_id, meta.producer_epoch):
                return InitResult(fenced_error)
        outcome = transition(meta.state, Event.INIT)
        if outcome == FENCE:
            self._fence_and_abort(meta)
            return InitResult(ConcurrentTransactionsError.errno)
        if isinstance(outcome, int):
            return InitResult(outcome)
        bumped = self._copy(meta, state=TxnState.EMPTY, timeout_ms=timeout_ms,
                            partitions=set(), start_ms=-1, last_update_ms=now,
                            last_producer_epoch=meta.producer_epoch)
        if meta.producer_epoch >= LAST_EPOCH:
            bumped.producer_id, bumped.producer_epoch = self._allocate(), 0
            bumped.last_producer_epoch = -1
        else:
            bumped.producer_epoch += 1
        error = self._write(bumped)
        if error:
            return InitResult(error)
        self._txns[transactional_id] = bumped
        return InitResult(0, bumped.producer_id, bumped.producer_epoch)

    # ------------------------------------------------------------------ the transaction

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], *, fenced_error: int) -> int:
        """AddPartitionsToTxn; AddOffsetsToTxn adds the group's offsets partition."""
        meta, error = self._current(transactional_id, producer_id, producer_epoch,
                                    fenced_error)
        if meta is None:
            return error
        wanted = set(partitions)
        outcome = transition(meta.state, Event.ADD)
        if isinstance(outcome, int) or not isinstance(outcome, TxnState):
            return outcome if isinstance(outcome, int) else InvalidTxnStateError.errno
        if meta.state is TxnState.ONGOING and wanted <= meta.partitions:
            return 0
        now = self._now_ms()
        ongoing = meta.state is TxnState.ONGOING
        updated = self._copy(meta, state=outcome,
                             partitions=(meta.partitions | wanted) if ongoing else wanted,
                             start_ms=meta.start_ms if ongoing else now, last_update_ms=now)
        error = self._write(updated)
        if not error:
            self._txns[transactional_id] = updated
        return error

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                    offsets_partition: int, *, fenced_error: int) -> int:
        """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins."""
        return self.add_partitions(transactional_id, producer_id, producer_epoch,
                                   [(OFFSETS_TOPIC, offsets_partition)],
                                   fenced_error=fenced_error)

    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                        commit: bool, *, fenced_error: int) -> int:
        meta, error = self._current(transactional_id, producer_id, producer_epoch,
                                    fenced_error)
        if meta is None:
            return error
        outcome = transition(meta.state, Event.COMMIT if commit else Event.ABORT)
        if outcome == RETRY_OK:
            return 0
        if not isinstance(outcome, TxnState):
            return outcome if isinstance(outcome, int) else InvalidTxnStateError.errno
        return self._prepare(meta, outcome)

    def verify_partitions(self, transactional_id: str, producer_id: int,
                          producer_epoch: int, partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, int]:
        """KIP-890's check (AddPartitionsToTxn v4 with verify_only, asked by a partition
        leader before it appends a transactional batch, and by the group coordinator before
        a TxnOffsetCommit): each partition is in the producer's ongoing transaction (0) or
        not (INVALID_TXN_STATE); or, for all of them, INVALID_PRODUCER_ID_MAPPING (an id
        this coordinator does not know under that producer id), PRODUCER_FENCED (another
        epoch), CONCURRENT_TRANSACTIONS (the transaction is ending), or the owner error."""
        wanted = list(partitions)
        error = self._owner_error(transactional_id)
        meta = self._txns.get(transactional_id)
        if error:
            pass
        elif meta is None or meta.producer_id != producer_id:
            error = InvalidProducerIdMappingError.errno
        elif meta.producer_epoch != producer_epoch:
            error = ProducerFencedError.errno
        elif meta.markers_pending or meta.state in (TxnState.PREPARE_COMMIT,
                                                    TxnState.PREPARE_ABORT):
            error = ConcurrentTransactionsError.errno
        if error or meta is None:
            return dict.fromkeys(wanted, error)
        ongoing = meta.state is TxnState.ONGOING
        return {tp: 0 if ongoing and tp in meta.partitions else InvalidTxnStateError.errno
                for tp in wanted}

    def markers_written(self, transactional_id: str, producer_id: int,
                        producer_epoch: int) -> None:
        """Every partition has its marker: write the complete state."""
        meta = self._txns.get(transactional_id)
        if (meta is None or not meta.markers_pending or meta.producer_id != producer_id
                or meta.producer_epoch != producer_epoch):
            return
        outcome = transition(meta.state, Event.MARKERS_WRITTEN)
        if not isinstance(outcome, TxnState):
            return
        done = self._copy(meta, state=outcome, partitions=set(),
                          last_update_ms=self._now_ms(), markers_pending=False)
        if self._write(done):
            meta.markers_pending = False  # retried by the next timer pass
            return
        self._txns[transactional_id] = done

    # ------------------------------------------------------------------ timers

    def abort_timed_out(self) -> list[str]:
        """Abort (fencing the producer) every transaction open longer than its timeout;
        re-send markers of prepared transactions whose earlier attempt stopped."""
        now = self._now_ms()
        aborted = []
        for meta in list(self._txns.values()):
            if meta.markers_pending:
                continue
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._send_markers(meta)
            elif (meta.state is TxnState.ONGOING
                  and meta.start_ms + meta.timeout_ms < now):
                log.info("aborting transaction %s: open for more than %d ms",
                         meta.transactional_id, meta.timeout_ms)
                self._fence_and_abort(meta)
                aborted.append(meta.transactional_id)
        return aborted

    def expire_idle(self) -> list[str]:
        """Forget ids idle longer than transactional.id.expiration.ms (a tombstone)."""
        now = self._now_ms()
        expired = []
        for meta in list(self._txns.values()):
            if meta.markers_pending or now - meta.last_update_ms <= self.config.id_expiration_ms:
                continue
            if not isinstance(transition(meta.state, Event.EXPIRE), TxnState):
                continue
            try:
                self._store.write(self.partition_for(meta.transactional_id),
                                  meta.transactional_id, None)
            except (KafkaError, OSError) as exc:
                log.warning("expiring %s failed: %s", meta.transactional_id, exc)
                continue
            del self._txns[meta.transactional_id]
            expired.append(meta.transactional_id)
        return expired

    # ------------------------------------------------------------------ tools

    def describe(self, transactional_id: str) -> tuple[int, TxnMetadata | None]:
        error = self._owner_error(transactional_id)
        if error:
            return error, None
        meta = self._txns.get(transactional_id)
        if meta is None:
            return TransactionalIdNotFoundError.errno, None
        return 0, meta

    def list_transactions(self, states: set[TxnState] | None, producer_ids: set[int] | None,
                          min_duration_ms: int = -1) -> tuple[int, list[TxnMetadata]]:
        """The ids matching the filters; COORDINATOR_LOAD_IN_PROGRESS (as Kafka answers)
        while a partition is loading, since its ids are missing from the list."""
        now = self._now_ms()
        error = CoordinatorLoadInProgressError.errno if self.ownership.loading else 0
        return error, [meta for meta in self._txns.values()
                if (not states or meta.state in states)
                and (not producer_ids or meta.producer_id in producer_ids)
                and (min_duration_ms < 0 or (meta.state is TxnState.ONGOING
                                             and now - meta.start_ms > min_duration_ms))]

    # ------------------------------------------------------------------ internals

    def _current(self, transactional_id: str, producer_id: int, producer_epoch: int,
                 fenced_error: int) -> tuple[TxnMetadata | None, int]:
        error = self._owner_error(transactional_id)
        if error:
            return None, error
        meta = self._txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return None, InvalidProducerIdMappingError.errno
        if meta.producer_epoch != producer_epoch:
            return None, fenced_error
        if meta.markers_pending:
            return None, ConcurrentTransactionsError.errno
        return meta, 0

    def _fence_and_abort(self, meta: TxnMetadata) -> None:
        """Kafka's epoch fence: the epoch goes up by one (so the old producer's requests
        are fenced) and the open transaction is aborted with the new epoch."""
        fence = transition(meta.state, Event.FENCE_ABORT)
        if not isinstance(fence, TxnState):
            return
        fenced = self._copy(meta, state=fence, last_producer_epoch=meta.producer_epoch)
        if meta.producer_epoch < LAST_EPOCH:
            fenced.producer_epoch += 1
        abort = transition(fenced.state, Event.FENCE_ABORT)
        assert isinstance(abort, TxnState)
        self._prepare(fenced, abort)

    def _prepare(self, meta: TxnMetadata, state: TxnState) -> int:
        prepared = self._copy(meta, state=state, last_update_ms=self._now_ms())
        error = self._write(prepared)
        if error:
            return error
        self._txns[meta.transactional_id] = prepared
        self._send_markers(prepared)
        return 0

    def _send_markers(self, meta: TxnMetadata) -> None:
        meta.markers_pending = True
        partition = self.partition_for(meta.transactional_id)
        self._markers.send(MarkerRequest(
            meta.transactional_id, meta.producer_id, meta.producer_epoch,
            self.ownership.epoch(partition), meta.state is TxnState.PREPARE_COMMIT,
            frozenset(meta.partitions)))

    def _write(self, meta: TxnMetadata) -> int:
        try:
            self._store.write(self.partition_for(meta.transactional_id),
                              meta.transactional_id, meta.log_value())
        except (KafkaError, OSError) as exc:
            log.warning("writing transaction %s failed: %s", meta.transactional_id, exc)
            return write_error(exc)
        return 0

    @staticmethod
    def _copy(meta: TxnMetadata, **changes: object) -> TxnMetadata:
        values = {name: getattr(meta, name) for name in TxnMetadata.__slots__}
        values["partitions"] = set(meta.partitions)
        values.update(changes)
        return TxnMetadata(**values)


class TxnLoader:
    """Replays one ``__transaction_state`` partition: the last value per transactional id
    wins, a tombstone forgets the id (compaction's view)."""

    def __init__(self, coordinator: TransactionCoordinator, partition: int) -> None:
        self._coordinator = coordinator
        self._partition = partition
        self._loaded: dict[str, TxnLogValue] = {}

    def load(self, records: Sequence[Record]) -> None:
        for record in records:
            if record.key is None or record.batch.is_control:
                continue
            try:
                transactional_id = decode_key(record.key)
                if record.value is None:
                    self._loaded.pop(transactional_id, None)
                else:
                    self._loaded[transactional_id] = decode_value(record.value)
            except TransactionLogFormatError as exc:
                log.warning("skipping %s-%d record at %d: %s", TRANSACTION_STATE_TOPIC,
                            self._partition, record.offset, exc)

    def complete(self) -> None:
        self._coordinator.install(self._partition, self._loaded)
