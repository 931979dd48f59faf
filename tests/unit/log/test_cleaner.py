"""The log cleaner on real segment files with a fake clock: a property test over any keyed
writes and tombstones, then the rules one by one (offsets kept, codecs kept, producer
state kept, min lag, HW bound, the active segment, several passes, grouping)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from cleaner_logs import (
    Clock,
    compacted_log,
    consume_from,
    keyed_batch,
    read_batches,
    read_records,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.records.batch_header import iter_batch_headers
from kafkalite_server.log.cleaner import Cleaner, LogCleaningError, plan_cleaning
from kafkalite_server.log.log import Log
from kafkalite_server.log.offset_map import SLOT_SIZE, OffsetMap

RETENTION = 10_000
START = 1_000_000

writes_strategy = st.lists(
    st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f"]),
                       st.one_of(st.none(), st.binary(min_size=0, max_size=40),
                                 st.integers(60, 150).map(lambda n: b"z" * n))),
             min_size=1, max_size=3),
    min_size=1, max_size=40)


def clean_fully(log: Log, cleaner: Cleaner, now: int, first_dirty: int = 0) -> int:
    """Passes until the first dirty offset reaches the log end (several when the map is
    small); returns it."""
    for _ in range(200):
        first_dirty = cleaner.clean(log, first_dirty, log.log_end_offset, now).first_dirty_offset
        if first_dirty >= log.active_segment.base_offset:
            return first_dirty
    raise AssertionError("the cleaner made no progress")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=writes_strategy, segment_bytes=st.integers(700, 3000),
       map_slots=st.integers(4, 64), codec=st.sampled_from([0, 1, 3]))
def test_cleaning_keeps_each_live_keys_last_value_and_tombstones_only_for_their_retention(
        tmp_path_factory: pytest.TempPathFactory, batches: list[list[tuple[bytes, bytes | None]]],
        segment_bytes: int, map_slots: int, codec: int) -> None:
    clock = Clock(START)
    log = compacted_log(tmp_path_factory.mktemp("c") / "t-0", clock,
                        segment_bytes=segment_bytes, delete_retention_ms=RETENTION)
    written: dict[int, tuple[bytes, bytes | None]] = {}
    for writes in batches:
        info = log.append_as_leader(keyed_batch(writes, timestamp=START, compression=codec),
                                    leader_epoch=0)
        for i, write in enumerate(writes):
            written[info.first_offset + i] = write
    log.roll()
    last = {key: (offset, value) for offset, (key, value) in sorted(written.items())}
    live = {key: entry for key, entry in last.items() if entry[1] is not None}
    cleaner = Cleaner(map_slots * SLOT_SIZE)

    def check(records: list[tuple[int, bytes | None, bytes | None, int]],
              tombstones_expected: bool) -> None:
        offsets = [offset for offset, *_ in records]
        assert offsets == sorted(set(offsets)), "an offset is duplicated or out of order"
        for offset, key, value, timestamp in records:
            assert written[offset] == (key, value), "a record changed"
            assert last[key][0] == offset, "an older value survived"
            assert timestamp == START + offsets_in_batch[offset]
        seen = {key: (offset, value) for offset, key, value, _ in records}
        for key, entry in live.items():
            assert seen.get(key) == entry, f"live key {key!r} lost its last value"
        dead = {key for key, (_, value) in last.items() if value is None}
        assert ({key for key, (_, value) in seen.items() if value is None}
                == (dead if tombstones_expected else set()))

    def check_every_position(cleaned: Log) -> None:
        """Cleaning never moves the log start, and a consumer at any earlier committed
        offset reads the compacted view of the records at or after it."""
        assert cleaned.log_start_offset == 0
        view = read_records(cleaned)
        for committed in range(cleaned.log_end_offset + 1):
            assert consume_from(cleaned, committed) == [r for r in view if r[0] >= committed]

    offsets_in_batch = {}
    offset = 0
    for writes in batches:
        for i in range(len(writes)):
            offsets_in_batch[offset] = i
            offset += 1

    clean_fully(log, cleaner, clock.now)
    check(read_records(log), tombstones_expected=True)
    check_every_position(log)
    clock.now += RETENTION - 1  # still inside delete.retention.ms
    first_dirty = clean_fully(log, cleaner, clock.now, log.log_end_offset)
    check(read_records(log), tombstones_expected=True)
    clock.now += 1  # the horizon is reached: tombstones go
    clean_fully(log, cleaner, clock.now, first_dirty)
    check(read_records(log), tombstones_expected=False)
    check_every_position(log)
    after = read_records(log)
    log.close()
    for clean_shutdown in (True, False):  # a clean restart, then recovery of every segment
        reopened = Log.open(log.directory, log.config, now_ms=clock,
                            clean_shutdown=clean_shutdown)
        assert read_records(reopened) == after  # recovery reads the same compacted log
        check_every_position(reopened)
        reopened.close()


def test_offsets_gaps_codec_and_headers_are_kept(tmp_path: Path) -> None:
    clock = Clock(START)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=1 << 20)
    big = b"v" * 200  # large enough for the codec to pay off (else it is not used)
    log.append_as_leader(keyed_batch([(b"k", big), (b"x", b"1"), (b"k", big)],
                                     compression=3), leader_epoch=4)
    log.append_as_leader(keyed_batch([(b"k", big + b"new")], compression=1), leader_epoch=5)
    log.roll()
    Cleaner(1 << 12).clean(log, 0, log.log_end_offset, clock.now)
    assert [(o, k, v) for o, k, v, _ in read_records(log)] == [(1, b"x", b"1"),
                                                               (3, b"k", big + b"new")]
    first, second = read_batches(log)
    assert first.compression_type == 3 and second.compression_type == 1
    assert (first.base_offset, first.next_offset) == (0, 3)  # last offset delta kept
    assert [r.headers for r in first] == [[("n", b"1")]]
    segment = log.segments[0]
    raw = segment.read_bytes(0, segment.size)
    assert [h.partition_leader_epoch for h in iter_batch_headers(raw)] == [4, 5]


def test_a_producers_last_batch_stays_as_an_empty_batch(tmp_path: Path) -> None:
    clock = Clock(START)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=1 << 20)
    log.append_as_leader(keyed_batch([(b"k", b"1"), (b"j", b"1")], producer_id=7,
                                     producer_epoch=0, base_sequence=0), leader_epoch=0)
    log.append_as_leader(keyed_batch([(b"k", b"2"), (b"j", b"2")], producer_id=9,
                                     producer_epoch=0, base_sequence=0), leader_epoch=0)
    log.append_as_leader(keyed_batch([(b"k", b"3"), (b"j", b"3")]), leader_epoch=0)
    log.roll()
    Cleaner(1 << 12).clean(log, 0, log.log_end_offset, clock.now)
    batches = read_batches(log)
    assert [(b.producer_id, b.base_sequence, b.base_offset, b.next_offset, len(list(b)))
            for b in batches] == [(7, 0, 0, 2, 0), (9, 0, 2, 4, 0), (-1, -1, 4, 6, 2)]
    log.close()
    reopened = compacted_log(log.directory, clock, segment_bytes=1 << 20)
    assert reopened.producer_last_offsets() == {7: 1, 9: 3}
    # the producer's next batch is in sequence after compaction
    reopened.append_as_leader(keyed_batch([(b"k", b"4")], producer_id=7, producer_epoch=0,
                                          base_sequence=2), leader_epoch=0)
    reopened.close()


def test_never_past_the_upper_bound_nor_the_active_segment(tmp_path: Path) -> None:
    clock = Clock(START)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=200)
    for i in range(12):
        log.append_as_leader(keyed_batch([(b"k", b"v%d" % i)]), leader_epoch=0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3
    bound = bases[2]  # say the high watermark sits at the third segment's start
    result = Cleaner(1 << 12).clean(log, 0, bound, clock.now)
    assert result.first_dirty_offset == bound
    kept = [o for o, *_ in read_records(log)]
    assert all(o in kept for o in range(bound, 12))  # nothing at or above the bound went
    assert [o for o in kept if o < bound] == [bound - 1]
    Cleaner(1 << 12).clean(log, 0, 10**9, clock.now)
    assert [o for o, *_ in read_records(log) if o >= log.active_segment.base_offset] == \
        list(range(log.active_segment.base_offset, 12))


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path: Path) -> None:
    clock = Clock(START)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=200, min_compaction_lag_ms=500)
    for i in range(6):
        log.append_as_leader(keyed_batch([(b"k", b"v")], timestamp=START + i * 100),
                             leader_epoch=0)
    segments, start = log.cleanable_segments()
    plan = plan_cleaning(segments, start, 0, 10**9, START + 650, min_compaction_lag_ms=500,
                         max_compaction_lag_ms=2**63 - 1)
    assert 0 < plan.cleanable_end < segments[-1].next_offset
    assert all(START + 650 - s.largest_timestamp >= 500 for s in segments
               if s.next_offset <= plan.cleanable_end)


def test_a_small_map_cleans_in_several_passes(tmp_path: Path) -> None:
    clock = Clock(START)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=400)
    for round_ in range(3):
        for key in range(20):
            log.append_as_leader(keyed_batch([(b"%d" % key, b"%d" % round_)]), leader_epoch=0)
    log.roll()
    cleaner = Cleaner(8 * SLOT_SIZE)
    first = cleaner.clean(log, 0, log.log_end_offset, clock.now).first_dirty_offset
    assert 0 < first < 60
    assert clean_fully(log, cleaner, clock.now, first) == 60
    assert sorted(v for _, _, v, _ in read_records(log)) == [b"2"] * 20


def test_small_segments_are_merged_under_segment_bytes(tmp_path: Path) -> None:
    clock = Clock(START)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=300)
    for i in range(40):
        log.append_as_leader(keyed_batch([(b"%d" % (i % 3), b"v%d" % i)]), leader_epoch=0)
    log.roll()
    before = len(log.segments)
    Cleaner(1 << 12).clean(log, 0, log.log_end_offset, clock.now)
    assert len(log.segments) < before
    assert all(s.size <= 300 for s in log.segments)
    assert sorted(k for _, k, _, _ in read_records(log)) == [b"0", b"1", b"2"]
    leftovers = [p.name for p in log.directory.iterdir()
                 if p.name.endswith((".cleaned", ".swap", ".deleted"))]
    assert leftovers == []


def test_corrupt_batch_makes_the_log_uncleanable_and_changes_nothing(tmp_path: Path) -> None:
    clock = Clock(START)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=200)
    for i in range(6):
        log.append_as_leader(keyed_batch([(b"k", b"v%d" % i)]), leader_epoch=0)
    first = log.segments[0]
    with open(first.log_path, "r+b") as file:  # flip a byte inside the first record
        file.seek(first.size - 3)
        byte = file.read(1)
        file.seek(first.size - 3)
        file.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(LogCleaningError, match="CRC"):
        Cleaner(1 << 12).clean(log, 0, log.log_end_offset, clock.now)
    assert len(log.segments) >= 3


def test_the_offset_map_is_sized_to_the_dirty_part_and_dropped_after_the_pass(
        tmp_path: Path) -> None:
    """An idle cleaner holds no map; a pass over 40 dirty offsets allocates a few KB, not
    the 128 MiB of log.cleaner.dedupe.buffer.size, and keeps none of it afterwards."""
    clock = Clock(START)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=400)
    for i in range(40):
        log.append_as_leader(keyed_batch([(b"%d" % (i % 5), b"v%d" % i)]), leader_epoch=0)
    log.roll()
    tracemalloc.start()
    try:
        cleaner = Cleaner(128 * 1024 * 1024)
        idle = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        cleaner.clean(log, 0, log.log_end_offset, clock.now)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert idle < 64 * 1024
    assert peak < 1024 * 1024
    assert after < 256 * 1024
    assert sorted(k for _, k, _, _ in read_records(log)) == [b"0", b"1", b"2", b"3", b"4"]


def test_offset_map_keeps_the_newest_offset_and_refuses_past_its_load_factor() -> None:
    offset_map = OffsetMap(10 * SLOT_SIZE)
    for offset, key in enumerate([b"a", b"b", b"a"]):
        offset_map.put(key, offset)
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.get(b"z")) == (2, 1, -1)
    assert offset_map.size == 2 and offset_map.free_entries == 7
    for n in range(7):
        offset_map.put(b"k%d" % n, 10 + n)
    with pytest.raises(OverflowError):
        offset_map.put(b"one-too-many", 99)
    offset_map.put(b"a", 100)  # an existing key still updates
    assert offset_map.get(b"a") == 100
    offset_map.clear()
    assert offset_map.get(b"a") == -1 and offset_map.size == 0
