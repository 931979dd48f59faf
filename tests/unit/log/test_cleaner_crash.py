"""A crash at each step of a cleaning and its swap, then recovery: nothing lost, nothing
duplicated, and the next cleaning ends with the same compacted log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cleaner_logs import Clock, compacted_log, keyed_batch, read_records

from kafkalite_server.log.cleaner import Cleaner
from kafkalite_server.log.log import Log
from kafkalite_server.log.segment import LogSegment

START = 1_000_000


class Crash(Exception):
    """Stands for the process dying at this point."""


def _fill(log: Log) -> dict[int, tuple[bytes, bytes | None]]:
    """60 writes, cleaned (the segments shrink), then 30 more: the pass under test merges
    the shrunk segments into groups and swaps each group."""
    written = _write(log, range(60))
    Cleaner(1 << 14).clean(log, 0, log.log_end_offset, START)
    written.update(_write(log, range(60, 90)))
    return written


def _write(log: Log, numbers: range) -> dict[int, tuple[bytes, bytes | None]]:
    written = {}
    for i in numbers:
        key = b"k%d" % (i % 7) if i % 2 else b"u%d" % i  # unique keys survive in every group
        value = None if i % 11 == 5 else b"value-%d" % i
        info = log.append_as_leader(keyed_batch([(key, value)], timestamp=START + i),
                                    leader_epoch=0)
        written[info.first_offset] = (key, value)
    log.roll()
    return written


def _check(records: list[tuple[int, bytes | None, bytes | None, int]],
           written: dict[int, tuple[bytes, bytes | None]]) -> None:
    offsets = [offset for offset, *_ in records]
    assert offsets == sorted(set(offsets)), "duplicated or reordered offsets"
    for offset, key, value, _ in records:
        assert written[offset] == (key, value)
    last = {key: (offset, value) for offset, (key, value) in sorted(written.items())}
    present = {(offset, key) for offset, key, *_ in records}
    for key, (offset, _value) in last.items():
        assert (offset, key) in present, f"lost the last record of {key!r}"


def _crash_after_n_calls(n: int) -> Callable[[str], None]:
    calls = {"count": 0}

    def fail(_step: str) -> None:
        calls["count"] += 1
        if calls["count"] == n:
            raise Crash

    return fail


def _crash_in(monkeypatch: pytest.MonkeyPatch, target: object, name: str, *,
              on_call: int, when: Callable[..., bool] = lambda *a, **k: True) -> None:
    original = getattr(target, name)
    calls = {"count": 0}

    def wrapper(*args: object, **kwargs: object) -> object:
        if when(*args, **kwargs):
            calls["count"] += 1
            if calls["count"] == on_call:
                raise Crash
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, wrapper)


def _recover_and_finish(directory: Path, clock: Clock,
                        written: dict[int, tuple[bytes, bytes | None]],
                        expected: list[tuple[int, bytes | None, bytes | None, int]]) -> None:
    recovered = compacted_log(directory, clock, segment_bytes=400)  # unclean: full recovery
    _check(read_records(recovered), written)
    assert not [p for p in directory.iterdir()
                if p.name.endswith((".cleaned", ".swap", ".deleted"))]
    Cleaner(1 << 14).clean(recovered, 0, recovered.log_end_offset, clock.now)
    assert read_records(recovered) == expected
    recovered.close()


def _expected(tmp_path: Path, clock: Clock) -> list[tuple[int, bytes | None, bytes | None, int]]:
    reference = compacted_log(tmp_path / "ref-0", clock, segment_bytes=400)
    _fill(reference)
    stats = Cleaner(1 << 14).clean(reference, 60, reference.log_end_offset, clock.now).stats
    assert stats.groups_swapped >= 3 and stats.segments_removed >= 3  # merged groups
    records = read_records(reference)
    reference.close()
    return records


# 4 steps per swapped group ("write", "cleaned", "swap", "replace"); the log makes 3 groups
@pytest.mark.parametrize("crash_at", range(1, 13))
def test_crash_at_each_cleaner_step_loses_and_duplicates_nothing(tmp_path: Path,
                                                                 crash_at: int) -> None:
    clock = Clock(START)
    expected = _expected(tmp_path, clock)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=400, file_delete_delay_ms=60_000)
    written = _fill(log)
    cleaner = Cleaner(1 << 14, fail_at=_crash_after_n_calls(crash_at))
    with pytest.raises(Crash):
        cleaner.clean(log, 60, log.log_end_offset, clock.now)
    _recover_and_finish(log.directory, clock, written, expected)


@pytest.mark.parametrize("on_call", [1, 2])
def test_crash_while_renaming_old_segments_deleted(tmp_path: Path, on_call: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(START)
    expected = _expected(tmp_path, clock)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=400, file_delete_delay_ms=60_000)
    written = _fill(log)
    _crash_in(monkeypatch, LogSegment, "mark_deleted", on_call=on_call)
    with pytest.raises(Crash):
        Cleaner(1 << 14).clean(log, 60, log.log_end_offset, clock.now)
    monkeypatch.undo()
    _recover_and_finish(log.directory, clock, written, expected)


@pytest.mark.parametrize("on_call", [1, 2, 3])
def test_crash_while_renaming_the_swap_files(tmp_path: Path, on_call: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexes are renamed first, the log last: a crash between them leaves a final-name
    index next to a ``.log.swap``, which recovery treats as old and rebuilds."""
    clock = Clock(START)
    expected = _expected(tmp_path, clock)
    log = compacted_log(tmp_path / "t-0", clock, segment_bytes=400, file_delete_delay_ms=60_000)
    written = _fill(log)
    import kafkalite_server.log.index as index_module
    _crash_in(monkeypatch, index_module._SparseIndex, "rename", on_call=on_call,
              when=lambda _self, path: not path.name.endswith((".deleted", ".swap")))
    with pytest.raises(Crash):
        Cleaner(1 << 14).clean(log, 60, log.log_end_offset, clock.now)
    monkeypatch.undo()
    _recover_and_finish(log.directory, clock, written, expected)
