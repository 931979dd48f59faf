"""RecordAccumulator: batching by size and linger, draining per leader, retries, memory."""

from __future__ import annotations

import pytest

from kafkalite.errors import KafkaTimeoutError
from kafkalite.producer import batch as batch_module
from kafkalite.producer.accumulator import RecordAccumulator
from kafkalite.records import decode_batches
from kafkalite.records.builder import ATOMIC_APPENDS
from kafkalite.structs import TopicPartition

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
TP2 = TopicPartition("t", 2)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000


class Leaders:
    def __init__(self, leaders: dict[TopicPartition, int | None]) -> None:
        self.leaders = leaders

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self.leaders.get(tp)


def make(clock: FakeClock, **overrides: object) -> RecordAccumulator:
    settings: dict = {
        "batch_size": 1024, "max_request_size": 8192, "linger_ms": 10, "compression_type": None,
        "buffer_memory": 1 << 20, "max_block_ms": 0, "delivery_timeout_ms": 1000,
        "retry_backoff_ms": 100, **overrides,
    }
    return RecordAccumulator(clock=clock, **settings)


def fill(acc: RecordAccumulator, tp: TopicPartition, count: int, size: int = 100) -> list:
    return [acc.append(tp, 1, None, bytes(size), None) for _ in range(count)]


def test_records_join_the_open_batch_until_it_is_full() -> None:
    clock = FakeClock()
    acc = make(clock)
    results = fill(acc, TP0, 12)
    assert results[0].opens_batch
    assert not any(r.opens_batch for r in results[1:8])
    first_new = next(i for i, r in enumerate(results) if i and r.opens_batch)
    # ~108 bytes per record, 61-byte header: 8 records fit in 1024 bytes, the 9th opens a batch
    assert first_new == 8


def test_a_batch_is_ready_only_after_linger_unless_full() -> None:
    clock = FakeClock()
    acc = make(clock)
    leaders = Leaders({TP0: 1})
    fill(acc, TP0, 1)
    check = acc.ready(leaders)
    assert check.ready_nodes == set()
    assert check.next_check == pytest.approx(clock.now + 0.010)
    clock.advance_ms(10)
    assert acc.ready(leaders).ready_nodes == {1}


def test_full_batch_is_ready_at_once() -> None:
    clock = FakeClock()
    acc = make(clock)
    fill(acc, TP0, 9)
    assert acc.ready(Leaders({TP0: 1})).ready_nodes == {1}


def test_flush_makes_everything_ready() -> None:
    clock = FakeClock()
    acc = make(clock)
    fill(acc, TP0, 1)
    acc.begin_flush()
    assert acc.ready(Leaders({TP0: 7})).ready_nodes == {7}
    acc.end_flush()
    assert acc.ready(Leaders({TP0: 7})).ready_nodes == set()


def test_unknown_leader_is_reported() -> None:
    clock = FakeClock()
    acc = make(clock)
    fill(acc, TP0, 1)
    clock.advance_ms(20)
    check = acc.ready(Leaders({}))
    assert check.unknown_leaders and check.ready_nodes == set()


def test_drain_takes_one_batch_per_partition_grouped_by_leader() -> None:
    clock = FakeClock()
    acc = make(clock)
    for tp in (TP0, TP1, TP2):
        fill(acc, tp, 12)  # two batches each
    leaders = Leaders({TP0: 1, TP1: 1, TP2: 2})
    drained = acc.drain(leaders, {1, 2}, max_request_size=1 << 20)
    assert sorted((n, b.tp.partition) for n, bs in drained.items() for b in bs) == [
        (1, 0), (1, 1), (2, 2)]
    assert all(b.record_count == 8 for bs in drained.values() for b in bs)
    again = acc.drain(leaders, {1}, max_request_size=1 << 20)
    assert [b.record_count for b in again[1]] == [4, 4]


def test_drain_respects_max_request_size_but_always_sends_one_batch() -> None:
    clock = FakeClock()
    acc = make(clock)
    fill(acc, TP0, 8)
    fill(acc, TP1, 8)
    drained = acc.drain(Leaders({TP0: 1, TP1: 1}), {1}, max_request_size=900)
    assert len(drained[1]) == 1


def test_built_batch_holds_the_records() -> None:
    clock = FakeClock()
    acc = make(clock, compression_type="gzip")
    for i in range(3):
        acc.append(TP0, 5 + i, b"k%d" % i, b"v%d" % i, [("h", b"x")])
    (batch,) = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    records = list(decode_batches(batch.close()))
    assert [(r.key, r.value, r.timestamp, r.headers) for r in records] == [
        (b"k%d" % i, b"v%d" % i, 5 + i, (("h", b"x"),)) for i in range(3)]


def test_reenqueued_batch_goes_first_and_waits_for_backoff() -> None:
    clock = FakeClock()
    acc = make(clock)
    leaders = Leaders({TP0: 1})
    fill(acc, TP0, 12)
    (first,) = acc.drain(leaders, {1}, 1 << 20)[1]
    acc.reenqueue(first)
    check = acc.ready(leaders)
    assert check.ready_nodes == set()
    assert check.next_check == pytest.approx(clock.now + 0.1)
    clock.advance_ms(100)
    (again,) = acc.drain(leaders, {1}, 1 << 20)[1]
    assert again is first and again.attempts == 1


def test_muted_partition_is_held_back() -> None:
    clock = FakeClock()
    acc = make(clock)
    fill(acc, TP0, 12)
    acc.mute(TP0)
    assert acc.drain(Leaders({TP0: 1}), {1}, 1 << 20) == {}
    acc.unmute(TP0)
    assert len(acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]) == 1


def test_batches_expire_after_delivery_timeout() -> None:
    clock = FakeClock()
    acc = make(clock)
    fill(acc, TP0, 1)
    assert acc.expire() == []
    clock.advance_ms(1000)
    (expired,) = acc.expire()
    assert expired.tp == TP0


def test_abort_on_new_batch_leaves_the_record_out_when_the_batch_is_full() -> None:
    clock = FakeClock()
    acc = make(clock)
    first = acc.append(TP0, 1, None, bytes(100), None, abort_on_new_batch=True)
    assert first is not None and first.opens_batch
    fill(acc, TP0, 7)
    result = acc.append(TP0, 1, None, bytes(100), None, abort_on_new_batch=True)
    assert result is None
    (batch,) = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    assert batch.record_count == 8 and not acc.has_undrained()


def test_buffer_memory_blocks_then_times_out() -> None:
    clock = FakeClock()
    acc = make(clock, buffer_memory=2048, batch_size=1024)
    fill(acc, TP0, 1)
    fill(acc, TP1, 1)
    with pytest.raises(KafkaTimeoutError, match="buffer_memory"):
        fill(acc, TP2, 1)


def test_memory_is_returned_when_a_batch_finishes() -> None:
    clock = FakeClock()
    acc = make(clock, buffer_memory=1024, batch_size=1024)
    fill(acc, TP0, 1)
    (batch,) = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    acc.deallocate(batch)
    assert fill(acc, TP1, 1)[0].opens_batch


@pytest.mark.parametrize("timestamp", [1.5, "1", 1 << 64])
def test_a_record_with_a_bad_timestamp_fails_alone_and_keeps_no_memory(
        timestamp: object) -> None:
    clock = FakeClock()
    acc = make(clock, buffer_memory=1024, batch_size=1024)
    for _ in range(2):  # once opening a batch, once into the open one
        with pytest.raises((TypeError, ValueError), match="record timestamp"):
            acc.append(TP0, timestamp, None, b"v", None)  # type: ignore[arg-type]
        fill(acc, TP0, 1)  # the whole buffer_memory is free for the next record
    assert acc.incomplete_count == 1
    (batch,) = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    assert batch.record_count == 2


def bulk(acc: RecordAccumulator, tp: TopicPartition, count: int, size: int = 100) -> list:
    values = [b"%06d" % i + bytes(size - 6) for i in range(count)]
    futures, reached = acc.append_many(tp, [1] * count, [None] * count, values, None, 0, count)
    assert reached == count
    return futures


def test_append_many_fills_batches_up_to_max_request_size_not_batch_size() -> None:
    clock = FakeClock()
    acc = make(clock, batch_size=1024, max_request_size=8192)
    futures = bulk(acc, TP0, 200)  # about 24 KB
    batches = acc.drain(Leaders({TP0: 1}), {1}, 1 << 30)[1]
    batches += acc.drain(Leaders({TP0: 1}), {1}, 1 << 30).get(1, [])
    batches += acc.drain(Leaders({TP0: 1}), {1}, 1 << 30).get(1, [])
    assert not acc.has_undrained()
    assert len(batches) == len(futures) == 3
    assert all(1024 < len(batch.close()) <= 8192 for batch in batches[:2])
    assert [(f._start, f.record_count) for f in futures] == [
        (0, batches[0].record_count), (0, batches[1].record_count),
        (0, batches[2].record_count)]
    values = [r.value for batch in batches for r in decode_batches(batch.close())]
    assert values == [b"%06d" % i + bytes(94) for i in range(200)]


def test_append_many_leaves_a_small_last_batch_open_at_batch_size() -> None:
    clock = FakeClock()
    acc = make(clock, batch_size=1024, max_request_size=8192, buffer_memory=4096)
    (future,) = bulk(acc, TP0, 3)
    # Only batch_size stays reserved: three more batches fit without waiting.
    fill(acc, TP1, 1)
    fill(acc, TP2, 1)
    assert acc.ready(Leaders({TP0: 1})).ready_nodes == set()  # lingering, not full
    joined = fill(acc, TP0, 12)  # up to batch_size, then a new batch
    assert [f.opens_batch for f in joined].count(True) == 1
    (first,) = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    assert 3 < first.record_count < 15 and len(first.close()) <= 1024
    assert future.record_count == 3


def test_append_many_batch_above_batch_size_is_sent_without_lingering() -> None:
    clock = FakeClock()
    acc = make(clock, batch_size=1024, max_request_size=8192)
    bulk(acc, TP0, 30)  # about 3 KB: one batch, above batch_size, below max_request_size
    assert acc.ready(Leaders({TP0: 1})).ready_nodes == {1}
    assert fill(acc, TP0, 1)[0].opens_batch


@pytest.mark.parametrize("build_when_full", [False, True])
def test_a_full_batch_is_built_by_the_appending_thread_when_asked(build_when_full: bool) -> None:
    clock = FakeClock()
    acc = make(clock, compression_type="lz4")
    acc.build_when_full = build_when_full
    futures = fill(acc, TP0, 12)  # the 10th record or so opens a second batch
    assert [f.opens_batch for f in futures].count(True) == 2
    first, second = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1] + \
        acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    assert first.is_closed is build_when_full and not second.is_closed
    records = list(decode_batches(first.close()))
    assert len(records) == first.record_count and records[0].value == bytes(100)


lock_free = pytest.mark.skipif(not ATOMIC_APPENDS,
                               reason="lock-free appends need the compiled records writer")


def _leave(acc: RecordAccumulator, clock: FakeClock, how: str) -> None:
    """Make TP0's open batch leave the open state the way ``how`` names."""
    if how == "drained":
        acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)
    elif how == "expired":
        clock.advance_ms(1000)
        assert len(acc.expire()) == 1
    elif how == "aborted":
        assert len(acc.abort_all()) == 1
    else:  # full: the next record through the lock opens a new batch
        fill(acc, TP0, 9)


@lock_free
@pytest.mark.parametrize("how", ["drained", "expired", "aborted", "full"])
def test_a_lock_free_append_declines_once_its_batch_leaves_the_open_state(how: str) -> None:
    clock = FakeClock()
    acc = make(clock)
    fill(acc, TP0, 1)
    append = acc.lock_free_append(TP0)
    assert append is not None
    held = append(7, None, b"a", None)
    assert held is not None and held[2] == 1  # the second record of the open batch
    _leave(acc, clock, how)
    assert append(8, None, b"b", None) is None
    fresh = acc.lock_free_append(TP0)
    assert fresh is None if how != "full" else fresh is not append


@lock_free
def test_records_appended_without_the_lock_are_in_the_built_batch() -> None:
    clock = FakeClock()
    acc = make(clock, compression_type="lz4")
    fill(acc, TP0, 1)
    append = acc.lock_free_append(TP0)
    assert append is not None
    futures = [append(i, None, b"v%d" % i, None) for i in range(5)]
    (batch,) = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    assert [f[2] for f in futures] == [1, 2, 3, 4, 5]
    values = [r.value for r in decode_batches(batch.close())]
    assert values == [bytes(100)] + [b"v%d" % i for i in range(5)]


@lock_free
def test_a_bulk_append_opens_its_own_batch_after_a_lock_free_append_went_out() -> None:
    clock = FakeClock()
    acc = make(clock, batch_size=1024, max_request_size=8192)
    fill(acc, TP0, 1)
    append = acc.lock_free_append(TP0)
    assert append is not None
    (future,) = bulk(acc, TP0, 3)
    assert append(1, None, b"late", None) is None  # sealed: the bulk append did not share it
    first = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    second = acc.drain(Leaders({TP0: 1}), {1}, 1 << 20)[1]
    assert [b.record_count for b in first + second] == [1, 3] and future.record_count == 3


def test_without_atomic_appends_no_append_goes_out_without_the_lock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_module, "ATOMIC_APPENDS", False)
    acc = make(FakeClock())
    fill(acc, TP0, 1)
    assert acc.lock_free_append(TP0) is None
    assert acc.lock_free_append(TP1) is None  # no batch at all
