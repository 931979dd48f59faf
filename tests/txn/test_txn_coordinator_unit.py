"""The transaction coordinator's decisions with a fake clock, store and marker sender."""

from __future__ import annotations

import itertools

import pytest
from fake_clock import FakeClock as Clock

from kafkalite.protocol.errors import (
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    NotCoordinatorError,
    ProducerFencedError,
)
from kafkalite_server.coordinator.hashing import partition_for
from kafkalite_server.txn.config import TxnConfig
from kafkalite_server.txn.coordinator import MarkerRequest, TransactionCoordinator
from kafkalite_server.txn.log_records import (
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kafkalite_server.txn.state import TRANSITIONS, Event, TxnState, transition

FENCED = ProducerFencedError.errno
TP = ("t", 0)


class FakeStore:
    def __init__(self) -> None:
        self.writes: list[tuple[str, TxnLogValue | None]] = []
        self.fail = False

    def write(self, partition: int, transactional_id: str, value: TxnLogValue | None) -> None:
        if self.fail:
            raise OSError("disk full")
        self.writes.append((transactional_id, value))


class FakeMarkers:
    def __init__(self) -> None:
        self.sent: list[MarkerRequest] = []
        self.complete_at_once = True
        self.coordinator: TransactionCoordinator | None = None

    def send(self, request: MarkerRequest) -> None:
        self.sent.append(request)
        if self.complete_at_once:
            assert self.coordinator is not None
            self.coordinator.markers_written(request.transactional_id, request.producer_id,
                                             request.producer_epoch)


@pytest.fixture
def setup() -> tuple[TransactionCoordinator, FakeStore, FakeMarkers, Clock]:
    store, markers, clock = FakeStore(), FakeMarkers(), Clock(1_000)
    ids = itertools.count(100)
    coordinator = TransactionCoordinator(TxnConfig(num_partitions=1, max_timeout_ms=60_000),
                                         store, markers, lambda: next(ids), clock)
    markers.coordinator = coordinator
    load(coordinator, 0, 7)
    return coordinator, store, markers, clock


def load(coordinator: TransactionCoordinator, partition: int, epoch: int,
         loaded: dict[str, TxnLogValue] | None = None) -> None:
    """What the coordinator runtime does when this broker becomes the partition's leader."""
    coordinator.ownership.begin_loading(partition, epoch)
    coordinator.ownership.complete_loading(partition)
    coordinator.install(partition, loaded or {})


def unload(coordinator: TransactionCoordinator, partition: int) -> None:
    coordinator.ownership.unload(partition)
    coordinator.unload(partition)


def test_every_state_event_pair_has_one_outcome() -> None:
    for state in TxnState:
        for event in Event:
            outcome = transition(state, event)
            assert outcome == TRANSITIONS.get((state, event), InvalidTxnStateError.errno)


def test_commit_runs_prepare_markers_complete(setup) -> None:
    coordinator, store, markers, _ = setup
    init = coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED)
    assert (init.error, init.producer_id, init.producer_epoch) == (0, 100, 0)
    assert coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED) == 0
    assert coordinator.end_transaction("tx", 100, 0, True, fenced_error=FENCED) == 0
    states = [value.state for _, value in store.writes if value is not None]
    assert states == [TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT,
                      TxnState.COMPLETE_COMMIT]
    assert markers.sent[0].commit and markers.sent[0].partitions == {TP}
    assert markers.sent[0].coordinator_epoch == 7
    assert coordinator.end_transaction("tx", 100, 0, True, fenced_error=FENCED) == 0  # retry
    assert len(store.writes) == 4


def test_end_txn_when_not_ongoing_changes_nothing(setup) -> None:
    coordinator, store, markers, _ = setup
    coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED)
    before = list(store.writes)
    assert coordinator.end_transaction("tx", 100, 0, True, fenced_error=FENCED) == \
        InvalidTxnStateError.errno
    assert coordinator.end_transaction("tx", 100, 0, False, fenced_error=FENCED) == \
        InvalidTxnStateError.errno
    assert store.writes == before and markers.sent == []
    coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED)
    coordinator.end_transaction("tx", 100, 0, False, fenced_error=FENCED)
    assert coordinator.end_transaction("tx", 100, 0, True, fenced_error=FENCED) == \
        InvalidTxnStateError.errno


def test_second_init_fences_the_first_and_aborts_its_transaction(setup) -> None:
    coordinator, _, markers, _ = setup
    coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED)
    coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED)
    retry = coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED)
    assert retry.error == ConcurrentTransactionsError.errno
    assert not markers.sent[-1].commit and markers.sent[-1].producer_epoch == 1
    second = coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED)
    assert (second.error, second.producer_epoch) == (0, 2)
    assert coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED) == FENCED
    assert coordinator.end_transaction("tx", 100, 0, True, fenced_error=47) == 47
    assert coordinator.add_partitions("tx", 999, 2, [TP], fenced_error=FENCED) == \
        InvalidProducerIdMappingError.errno


def test_timeouts(setup) -> None:
    coordinator, _, markers, clock = setup
    assert coordinator.init_producer_id("tx", 0, fenced_error=FENCED).error == \
        InvalidTransactionTimeoutError.errno
    assert coordinator.init_producer_id("tx", 60_001, fenced_error=FENCED).error == \
        InvalidTransactionTimeoutError.errno
    coordinator.init_producer_id("tx", 5_000, fenced_error=FENCED)
    coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED)
    clock.now += 5_000
    assert coordinator.abort_timed_out() == []
    clock.now += 1
    assert coordinator.abort_timed_out() == ["tx"]
    error, meta = coordinator.describe("tx")
    assert error == 0 and meta is not None
    assert (meta.state, meta.producer_epoch) == (TxnState.COMPLETE_ABORT, 1)
    assert not markers.sent[-1].commit
    assert coordinator.end_transaction("tx", 100, 0, True, fenced_error=FENCED) == FENCED


def test_markers_pending_means_concurrent_transactions(setup) -> None:
    coordinator, _, markers, _ = setup
    markers.complete_at_once = False
    coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED)
    coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED)
    coordinator.end_transaction("tx", 100, 0, True, fenced_error=FENCED)
    concurrent = ConcurrentTransactionsError.errno
    assert coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED) == concurrent
    assert coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED).error == concurrent
    coordinator.markers_written("tx", 100, 0)
    assert coordinator.describe("tx")[1].state is TxnState.COMPLETE_COMMIT


def test_failed_write_changes_nothing(setup) -> None:
    coordinator, store, _, _ = setup
    coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED)
    store.fail = True
    assert coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED) != 0
    assert coordinator.describe("tx")[1].state is TxnState.EMPTY


def test_not_coordinator_and_loading(setup) -> None:
    coordinator, _, _, _ = setup
    unload(coordinator, 0)
    assert coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED).error == \
        NotCoordinatorError.errno


def test_loading_resends_markers_of_prepared_transactions(setup) -> None:
    coordinator, _, markers, _ = setup
    value = TxnLogValue(5, 3, 10_000, TxnState.PREPARE_ABORT, frozenset({TP}), 1, 1)
    unload(coordinator, 0)
    load(coordinator, 0, 8, {"tx": value})
    assert markers.sent[-1] == MarkerRequest("tx", 5, 3, 8, False, frozenset({TP}))
    assert coordinator.describe("tx")[1].state is TxnState.COMPLETE_ABORT


def test_log_records_round_trip() -> None:
    value = TxnLogValue(12, 3, 60_000, TxnState.ONGOING, frozenset({("a", 1), ("a", 0),
                                                                     ("b", 2)}), 99, 98)
    assert decode_value(encode_value(value)) == value
    assert decode_key(encode_key("tx-é")) == "tx-é"
    assert 0 <= partition_for("tx", 50) < 50


def test_verification_answers_whether_each_partition_is_in_the_transaction(setup) -> None:
    coordinator, _, markers, _ = setup
    other = ("t", 1)
    assert coordinator.verify_partitions("tx", 100, 0, [TP]) == {
        TP: InvalidProducerIdMappingError.errno}  # an id never initialized
    coordinator.init_producer_id("tx", 30_000, fenced_error=FENCED)
    assert coordinator.verify_partitions("tx", 100, 0, [TP]) == {TP: InvalidTxnStateError.errno}
    coordinator.add_partitions("tx", 100, 0, [TP], fenced_error=FENCED)
    assert coordinator.verify_partitions("tx", 100, 0, [TP, other]) == {
        TP: 0, other: InvalidTxnStateError.errno}
    assert coordinator.verify_partitions("tx", 101, 0, [TP]) == {
        TP: InvalidProducerIdMappingError.errno}
    assert coordinator.verify_partitions("tx", 100, 1, [TP]) == {TP: FENCED}
    markers.complete_at_once = False
    coordinator.end_transaction("tx", 100, 0, True, fenced_error=FENCED)
    assert coordinator.verify_partitions("tx", 100, 0, [TP]) == {
        TP: ConcurrentTransactionsError.errno}
    unload(coordinator, 0)
    assert coordinator.verify_partitions("tx", 100, 0, [TP]) == {TP: NotCoordinatorError.errno}
