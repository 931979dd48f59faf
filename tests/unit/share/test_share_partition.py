"""The share partition state machine on a fake clock: acquisition, lock expiry, delivery
count and archiving, acknowledgements, the SPSO/SPEO, the in-flight bound, and its
durable form replayed."""

from __future__ import annotations

import pytest
from fake_clock import FakeClock

from kafkalite.protocol.errors import InvalidRecordStateError, InvalidRequestError
from kafkalite_server.share.partition import (
    Acknowledgement,
    AcquiredRange,
    LogBatch,
    ShareLimits,
    SharePartition,
)
from kafkalite_server.share.state import (
    TRANSITIONS,
    Event,
    PartitionState,
    RecordState,
    StateBatch,
    merge_batches,
)

ACCEPT, RELEASE, REJECT, GAP = (int(e) for e in (Event.ACCEPT, Event.RELEASE, Event.REJECT,
                                                 Event.GAP))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_000_000)


def make(clock: FakeClock, **limits: int) -> SharePartition:
    partition = SharePartition(ShareLimits(**{"lock_duration_ms": 1000, **limits}), clock)
    partition.load(PartitionState(start_offset=0))
    return partition


def log(first: int, last: int, deliverable: bool = True) -> LogBatch:
    return LogBatch(first, last, deliverable)


def ack(first: int, last: int, *types: int) -> Acknowledgement:
    return Acknowledgement(first, last, tuple(types))


def test_acquire_hands_out_available_records_once(clock: FakeClock) -> None:
    partition = make(clock)
    assert partition.next_fetch_offset() == 0
    assert partition.acquire("a", [log(0, 9)], 4) == [AcquiredRange(0, 3, 1)]
    assert partition.next_fetch_offset() == 4
    # what a second member reads from there is the rest; nothing is handed out twice
    assert partition.acquire("b", [log(0, 9)], 100) == [AcquiredRange(4, 9, 1)]
    assert partition.acquire("c", [log(0, 9)], 100) == []
    assert (partition.start_offset, partition.end_offset) == (0, 9)
    assert partition.owner(2) == "a" and partition.owner(7) == "b"


def test_accept_moves_the_start_offset_past_acknowledged_records(clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 4)], 5)
    assert partition.acknowledge("a", [ack(1, 2, ACCEPT)]) == 0
    assert partition.start_offset == 0  # offset 0 still in flight holds the SPSO back
    assert partition.acknowledge("a", [ack(0, 0, ACCEPT)]) == 0
    assert partition.start_offset == 3 and partition.end_offset == 4


def test_release_makes_a_record_available_again_with_its_count(clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 2)], 3)
    assert partition.acknowledge("a", [ack(0, 2, ACCEPT, RELEASE, ACCEPT)]) == 0
    assert partition.state_of(1) is RecordState.AVAILABLE
    assert partition.next_fetch_offset() == 1
    assert partition.acquire("b", [log(1, 2)], 10) == [AcquiredRange(1, 1, 2)]


def test_reject_archives_a_record_for_good(clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 1)], 2)
    assert partition.acknowledge("a", [ack(0, 0, REJECT), ack(1, 1, ACCEPT)]) == 0
    assert partition.start_offset == 2
    assert partition.acquire("a", [log(0, 1)], 10) == []


def test_an_expired_lock_makes_records_available_to_others(clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 3)], 4)
    clock.now += 999
    assert not partition.expire_locks()
    assert partition.next_lock_deadline() == clock.now + 1
    clock.now += 1
    assert partition.expire_locks()
    assert partition.acquire("b", [log(0, 3)], 10) == [AcquiredRange(0, 3, 2)]
    # the first member's late acknowledgement is refused: the records are b's now
    assert partition.acknowledge("a", [ack(0, 3, ACCEPT)]) == InvalidRecordStateError.errno
    assert partition.acknowledge("b", [ack(0, 3, ACCEPT)]) == 0


def test_a_record_delivered_to_the_limit_is_archived(clock: FakeClock) -> None:
    partition = make(clock, delivery_count_limit=5)
    for delivery in range(1, 6):
        assert partition.acquire("a", [log(0, 0)], 1) == [AcquiredRange(0, 0, delivery)]
        if delivery % 2:
            assert partition.acknowledge("a", [ack(0, 0, RELEASE)]) == 0
        else:
            clock.now += 1000
            assert partition.expire_locks()
    assert partition.state_of(0) is RecordState.ARCHIVED
    assert partition.start_offset == 1
    assert partition.acquire("a", [log(0, 0)], 1) == []


def test_control_and_aborted_batches_and_holes_are_archived_never_handed_out(
        clock: FakeClock) -> None:
    partition = make(clock)
    batches = [log(0, 1), log(2, 2, deliverable=False), log(5, 6)]  # 3-4: no record there
    assert partition.acquire("a", batches, 10) == [AcquiredRange(0, 1, 1), AcquiredRange(5, 6, 1)]
    assert [partition.state_of(o) for o in range(2, 5)] == [RecordState.ARCHIVED] * 3
    partition.acknowledge("a", [ack(0, 1, ACCEPT), ack(5, 6, ACCEPT)])
    assert partition.start_offset == 7


def test_gap_acknowledgements_archive(clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 2)], 3)
    assert partition.acknowledge("a", [ack(0, 2, ACCEPT, GAP, ACCEPT)]) == 0
    assert partition.start_offset == 3


def test_acknowledgements_apply_all_or_none(clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 3)], 4)
    # offset 5 was never handed out: the whole request fails, 0-1 stay acquired
    assert partition.acknowledge("a", [ack(0, 1, ACCEPT), ack(5, 5, ACCEPT)]) \
        == InvalidRecordStateError.errno
    assert partition.state_of(0) is RecordState.ACQUIRED
    assert partition.acknowledge("b", [ack(0, 0, ACCEPT)]) == InvalidRecordStateError.errno
    bad = [[ack(0, 1, ACCEPT, ACCEPT, ACCEPT)], [ack(1, 0, ACCEPT)], [ack(0, 0, 7)],
           [ack(2, 3, ACCEPT), ack(0, 1, ACCEPT)], [ack(0, 2, ACCEPT), ack(2, 3, ACCEPT)]]
    for acknowledgements in bad:
        assert partition.acknowledge("a", acknowledgements) == InvalidRequestError.errno
    assert partition.acquired_by("a") == 4


def test_in_flight_records_are_bounded(clock: FakeClock) -> None:
    partition = make(clock, max_record_locks=5)
    assert partition.acquire("a", [log(0, 99)], 100) == [AcquiredRange(0, 4, 1)]
    assert not partition.can_acquire()
    assert partition.acquire("b", [log(5, 99)], 100) == []
    partition.acknowledge("a", [ack(0, 1, ACCEPT)])
    assert partition.can_acquire()
    assert partition.acquire("b", [log(5, 99)], 100) == [AcquiredRange(5, 6, 1)]


def test_a_member_leaving_releases_what_it_holds(clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 1)], 2)
    partition.acquire("b", [log(2, 3)], 2)
    assert partition.release_member("a")
    assert partition.state_of(0) is RecordState.AVAILABLE
    assert partition.state_of(2) is RecordState.ACQUIRED


def test_snapshot_and_load_keep_what_is_done_and_redeliver_what_was_in_flight(
        clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 5)], 6)
    partition.acknowledge("a", [ack(0, 0, ACCEPT), ack(2, 3, ACCEPT, REJECT), ack(4, 4, RELEASE)])
    stored = partition.snapshot(leader_epoch=3)
    assert stored.start_offset == 1 and stored.leader_epoch == 3
    assert stored.batches == (StateBatch(1, 1, 0, 1), StateBatch(2, 2, 2, 1),
                              StateBatch(3, 3, 4, 1), StateBatch(4, 5, 0, 1))
    replayed = SharePartition(partition.limits, clock)
    replayed.load(stored)
    # acquired (1, 5) and released (4) records come back; acknowledged ones never do
    assert replayed.acquire("b", [log(0, 9)], 100) == [
        AcquiredRange(1, 1, 2), AcquiredRange(4, 5, 2), AcquiredRange(6, 9, 1)]
    assert replayed.snapshot().batches[0] == StateBatch(1, 1, 0, 2)


def test_move_start_forgets_what_the_log_no_longer_holds(clock: FakeClock) -> None:
    partition = make(clock)
    partition.acquire("a", [log(0, 4)], 5)
    partition.move_start(3)
    assert partition.start_offset == 3 and partition.next_fetch_offset() == 5
    assert partition.acknowledge("a", [ack(0, 4, ACCEPT)]) == 0
    assert partition.start_offset == 5


def test_every_transition_is_in_the_table() -> None:
    assert TRANSITIONS[(RecordState.AVAILABLE, Event.ACQUIRE)] is RecordState.ACQUIRED
    assert all(source is RecordState.ACQUIRED for source, event in TRANSITIONS
               if event is not Event.ACQUIRE)
    assert (RecordState.ACKNOWLEDGED, Event.RELEASE) not in TRANSITIONS


def test_merging_state_batches_by_range() -> None:
    old = (StateBatch(10, 19, 0, 1), StateBatch(20, 10**12, 4, 0))
    new = (StateBatch(12, 13, 2, 1), StateBatch(30, 40, 0, 2))
    assert merge_batches(11, old, new) == (
        StateBatch(11, 11, 0, 1), StateBatch(12, 13, 2, 1), StateBatch(14, 19, 0, 1),
        StateBatch(20, 29, 4, 0), StateBatch(30, 40, 0, 2), StateBatch(41, 10**12, 4, 0))
    assert merge_batches(50, old, new) == (StateBatch(50, 10**12, 4, 0),)
