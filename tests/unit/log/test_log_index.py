"""Offset and time index files: lookups against a brute-force scan, truncation, checks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite_server.log.index import (
    CorruptIndexError,
    IndexFullError,
    InvalidIndexEntryError,
    OffsetIndex,
    TimeIndex,
)

BASE = 1_000


def _offset_entries(draw_gaps: list[int]) -> list[tuple[int, int]]:
    offset, position, entries = BASE, 0, []
    for gap in draw_gaps:
        offset += gap
        position += gap * 7
        entries.append((offset, position))
    return entries


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.integers(1, 50), max_size=60), targets=st.lists(
    st.integers(BASE - 5, BASE + 3_100), min_size=1, max_size=20))
def test_offset_lookup_matches_brute_force(tmp_path_factory: pytest.TempPathFactory,
                                           gaps: list[int], targets: list[int]) -> None:
    path = tmp_path_factory.mktemp("idx") / "00000000000000001000.index"
    index = OffsetIndex(path, BASE, 1 << 20)
    entries = _offset_entries(gaps)
    for offset, position in entries:
        index.append(offset, position)
    reopened = OffsetIndex(path, BASE, 1 << 20)
    for target in targets:
        expected = max((e for e in entries if e[0] <= target), default=(BASE, 0))
        assert index.lookup(target) == expected
        assert reopened.lookup(target) == expected
    index.close()
    reopened.close()


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 30), st.integers(1, 9)), max_size=60),
       targets=st.lists(st.integers(-5, 2_000), min_size=1, max_size=20))
def test_time_lookup_matches_brute_force(tmp_path_factory: pytest.TempPathFactory,
                                         steps: list[tuple[int, int]],
                                         targets: list[int]) -> None:
    index = TimeIndex(tmp_path_factory.mktemp("tidx") / "x.timeindex", BASE, 1 << 20)
    timestamp, offset, kept = 0, BASE, []
    for ts_step, offset_step in steps:
        timestamp += ts_step
        offset += offset_step
        index.maybe_append(timestamp, offset)
        if not kept or timestamp > kept[-1][0]:  # equal timestamps are skipped
            kept.append((timestamp, offset))
    assert index.entries == len(kept)
    for target in targets:
        expected = max((e for e in kept if e[0] <= target), default=(-1, BASE))
        assert index.lookup(target) == expected
    index.close()


def test_file_format_is_big_endian_fixed_entries(tmp_path: Path) -> None:
    offsets = OffsetIndex(tmp_path / "a.index", BASE, 1 << 20)
    offsets.append(BASE + 3, 4_200)
    times = TimeIndex(tmp_path / "a.timeindex", BASE, 1 << 20)
    times.maybe_append(1_700_000_000_000, BASE + 3)
    assert (tmp_path / "a.index").read_bytes() == struct.pack(">ii", 3, 4_200)
    assert (tmp_path / "a.timeindex").read_bytes() == struct.pack(">qi", 1_700_000_000_000, 3)


def test_offset_index_rejects_non_increasing_and_full(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "a.index", BASE, 16)  # room for two entries
    index.append(BASE + 5, 10)
    with pytest.raises(InvalidIndexEntryError):
        index.append(BASE + 5, 20)
    index.append(BASE + 6, 20)
    assert index.is_full
    with pytest.raises(IndexFullError):
        index.append(BASE + 7, 30)


def test_time_index_keeps_a_slot_for_the_final_entry(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "a.timeindex", BASE, 24)  # two entries
    index.maybe_append(10, BASE + 1)
    assert index.is_full
    with pytest.raises(IndexFullError):
        index.maybe_append(20, BASE + 2)
    index.maybe_append(20, BASE + 2, skip_full_check=True)
    assert index.last_entry == (20, BASE + 2)


def test_truncate_to_drops_entries_at_and_above(tmp_path: Path) -> None:
    offsets = OffsetIndex(tmp_path / "a.index", BASE, 1 << 20)
    times = TimeIndex(tmp_path / "a.timeindex", BASE, 1 << 20)
    for i in range(1, 6):
        offsets.append(BASE + i * 10, i * 100)
        times.maybe_append(i * 1_000, BASE + i * 10)
    offsets.truncate_to(BASE + 30)
    times.truncate_to(BASE + 30)
    assert offsets.entries == times.entries == 2
    assert offsets.lookup(BASE + 99) == (BASE + 20, 200)
    assert times.lookup(10**9) == (2_000, BASE + 20)
    assert (tmp_path / "a.index").stat().st_size == 16
    assert (tmp_path / "a.timeindex").stat().st_size == 24


def test_sanity_check_rejects_partial_entry(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    path.write_bytes(struct.pack(">ii", 1, 0) + b"\x00\x01\x02")
    index = OffsetIndex(path, BASE, 1 << 20)
    with pytest.raises(CorruptIndexError, match="multiple"):
        index.sanity_check(100)
    index.trim_to_valid_size()
    index.sanity_check(100)
    assert path.stat().st_size == 8


def _offset_index(tmp_path: Path, entries: list[tuple[int, int]]) -> OffsetIndex:
    path = tmp_path / "a.index"
    path.write_bytes(b"".join(struct.pack(">ii", *entry) for entry in entries))
    return OffsetIndex(path, BASE, 1 << 20)


@pytest.mark.parametrize(("entries", "problem"), [
    ([(-4, 0)], "relative offset -4 is below 0"),
    ([(5, 10), (5, 20)], "relative offsets are not strictly increasing"),
    ([(5, 10), (3, 20)], "relative offsets are not strictly increasing"),
    ([(5, -10)], "position -10 is below 0"),
    ([(5, 20), (9, 10)], "positions are not strictly increasing"),
    ([(5, 10), (9, 100)], "position 100 is not below 100"),
])
def test_offset_sanity_check_rejects_every_bad_entry(tmp_path: Path, entries, problem) -> None:
    with pytest.raises(CorruptIndexError, match=problem):
        _offset_index(tmp_path, entries).sanity_check(100)


def test_offset_sanity_check_accepts_a_sorted_index_inside_the_log(tmp_path: Path) -> None:
    _offset_index(tmp_path, [(1, 10), (5, 40), (9, 99)]).sanity_check(100)


@pytest.mark.parametrize(("entries", "problem"), [
    ([(500, 1), (100, 2)], "timestamps are not increasing"),
    ([(100, 3), (200, 2)], "relative offsets are not increasing"),
    ([(100, -3)], "relative offset -3 is below 0"),
])
def test_time_sanity_check_rejects_every_bad_entry(tmp_path: Path, entries, problem) -> None:
    path = tmp_path / "a.timeindex"
    path.write_bytes(b"".join(struct.pack(">qi", *entry) for entry in entries))
    with pytest.raises(CorruptIndexError, match=problem):
        TimeIndex(path, BASE, 1 << 20).sanity_check()


def test_reset_empties_an_unsorted_index(tmp_path: Path) -> None:
    index = _offset_index(tmp_path, [(9, 10), (1, 20), (5, 5)])
    index.reset()
    assert index.entries == 0 and (tmp_path / "a.index").stat().st_size == 0
