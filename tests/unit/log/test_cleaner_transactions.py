"""The cleaner and transactions: aborted records go and never enter the offset map; a
marker stays until its transaction has no records left and its delete horizon passed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cleaner_logs import Clock, compacted_log, read_batches
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalite_server.log.cleaner import Cleaner
from kafkalite_server.log.log import Log

RETENTION = 10_000
KEYS = [b"a", b"b", b"c", b"d"]


def _batch(writes: list[tuple[bytes, bytes]], *, producer_id: int, sequence: int,
           transactional: bool) -> bytearray:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=0, base_sequence=sequence, batch_size=1 << 20)
    for i, (key, value) in enumerate(writes):
        builder.append(i, timestamp=1_000 + i, key=key, value=value, headers=[])
    return bytearray(builder.build())


@dataclass
class Model:
    """What was written: which offsets are committed, and every marker's transaction."""

    log: Log
    committed: dict[int, tuple[bytes, bytes]] = field(default_factory=dict)
    aborted: set[int] = field(default_factory=set)
    markers: dict[int, tuple[bool, set[int]]] = field(default_factory=dict)
    """marker offset -> (commit, offsets of its transaction's records)."""
    open_txns: dict[int, set[int]] = field(default_factory=dict)
    pending: dict[int, dict[int, tuple[bytes, bytes]]] = field(default_factory=dict)
    sequences: dict[int, int] = field(default_factory=dict)

    def write(self, producer_id: int, writes: list[tuple[bytes, bytes]],
              transactional: bool) -> None:
        sequence = self.sequences.get(producer_id, 0)
        self.sequences[producer_id] = sequence + len(writes)
        info = self.log.append_as_leader(
            _batch(writes, producer_id=producer_id, sequence=sequence,
                   transactional=transactional), leader_epoch=0)
        records = {info.first_offset + i: write for i, write in enumerate(writes)}
        if transactional:
            self.open_txns.setdefault(producer_id, set()).update(records)
            self.pending.setdefault(producer_id, {}).update(records)
        else:
            self.committed.update(records)

    def end(self, producer_id: int, commit: bool) -> None:
        info = self.log.append_marker(producer_id, 0, 0, commit, leader_epoch=0)
        offsets = self.open_txns.pop(producer_id)
        records = self.pending.pop(producer_id)
        self.markers[info.first_offset] = (commit, offsets)
        if commit:
            self.committed.update(records)
        else:
            self.aborted.update(records)

    def last_committed(self) -> dict[bytes, bytes]:
        return {key: value for _, (key, value) in sorted(self.committed.items())}


def _read(log: Log, model: Model, *, committed_only: bool) -> tuple[dict[bytes, bytes],
                                                                    set[int], set[int]]:
    """A reader from the start: (each key's last value, data offsets, marker offsets).
    read_committed drops records as a Kafka consumer does: a producer is aborted from the
    first offset of an aborted transaction in the fetch response until its abort marker."""
    aborted_txns = sorted(log.collect_aborted(0, log.log_end_offset),
                          key=lambda entry: entry.first_offset)
    aborted_now: set[int] = set()
    view: dict[bytes, bytes] = {}
    data: set[int] = set()
    markers: set[int] = set()
    for batch in read_batches(log):
        while aborted_txns and aborted_txns[0].first_offset <= batch.base_offset:
            aborted_now.add(aborted_txns.pop(0).producer_id)
        if batch.is_control_batch:
            markers.add(batch.base_offset)
            if not model.markers[batch.base_offset][0]:
                aborted_now.discard(batch.producer_id)
            continue
        if committed_only and batch.is_transactional and batch.producer_id in aborted_now:
            continue
        for record in batch:
            view[record.key] = record.value
            data.add(record.offset)
    return view, data, markers


def _clean(log: Log, cleaner: Cleaner, now: int, passes: int = 4) -> None:
    first_dirty = 0
    for _ in range(passes):  # a marker needs passes: records go, then stamp, then drop
        first_dirty = 0 if first_dirty >= log.active_segment.base_offset else first_dirty
        first_dirty = cleaner.clean(log, first_dirty, log.log_end_offset,
                                    now).first_dirty_offset


write_list = st.lists(st.tuples(st.sampled_from(KEYS), st.binary(min_size=1, max_size=8)),
                      min_size=1, max_size=3)
steps_strategy = st.lists(st.one_of(
    st.tuples(st.just("plain"), st.integers(0, 1), write_list),
    st.tuples(st.just("txn"), st.integers(2, 3), write_list),
    st.tuples(st.just("end"), st.integers(2, 3), st.booleans())), min_size=1, max_size=30)


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps_strategy, segment_bytes=st.integers(300, 1500),
       final_commits=st.booleans())
def test_readers_see_each_keys_last_committed_value_and_markers_go_only_when_empty(
        tmp_path_factory, steps, segment_bytes: int, final_commits: bool) -> None:
    clock = Clock(1_000_000)
    log = compacted_log(tmp_path_factory.mktemp("log"), clock, segment_bytes=segment_bytes,
                        delete_retention_ms=RETENTION)
    model = Model(log)
    for kind, producer_id, arg in steps:
        if kind == "end":
            if producer_id in model.open_txns:
                model.end(producer_id, arg)
        else:
            model.write(producer_id, arg, transactional=kind == "txn")
    for producer_id in list(model.open_txns):
        model.end(producer_id, final_commits)
    log.roll()
    cleaner = Cleaner(64 * 1024)

    _clean(log, cleaner, clock.now)
    expected = model.last_committed()
    for committed_only in (True, False):
        view, data, markers = _read(log, model, committed_only=committed_only)
        assert view == expected
        assert not data & model.aborted
        assert data <= set(model.committed)
    assert markers == set(model.markers)  # within delete.retention.ms every marker stays

    clock.now += RETENTION + 1
    _clean(log, cleaner, clock.now)
    for committed_only in (True, False):
        view, data, markers = _read(log, model, committed_only=committed_only)
        assert view == expected
        assert not data & model.aborted
    assert markers == {offset for offset, (_, records) in model.markers.items()
                       if records & data}


def test_an_aborted_value_never_wins_over_the_committed_one(tmp_path: Path) -> None:
    """Regression: the aborted write of a key came last, entered the offset map and made
    the cleaner drop the committed value, so that key vanished for read_committed readers."""
    clock = Clock(1_000_000)
    log = compacted_log(tmp_path, clock, delete_retention_ms=RETENTION)
    model = Model(log)
    model.write(7, [(b"k", b"committed")], transactional=True)
    model.end(7, commit=True)
    model.write(7, [(b"k", b"aborted")], transactional=True)
    model.write(1, [(b"other", b"plain")], transactional=False)
    model.end(7, commit=False)
    log.roll()
    _clean(log, Cleaner(64 * 1024), clock.now, passes=1)
    for committed_only in (True, False):
        view, data, _ = _read(log, model, committed_only=committed_only)
        assert view == {b"k": b"committed", b"other": b"plain"}
        assert not data & model.aborted


def test_a_marker_outlives_its_records_by_delete_retention(tmp_path: Path) -> None:
    clock = Clock(1_000_000)
    log = compacted_log(tmp_path, clock, delete_retention_ms=RETENTION)
    model = Model(log)
    model.write(7, [(b"k", b"v1")], transactional=True)
    model.end(7, commit=True)
    model.write(7, [(b"k", b"v2")], transactional=True)
    model.end(7, commit=False)
    model.write(1, [(b"k", b"v3")], transactional=False)
    log.roll()
    cleaner = Cleaner(64 * 1024)
    first_commit, abort = sorted(model.markers)

    result = cleaner.clean(log, 0, log.log_end_offset, clock.now)
    assert _read(log, model, committed_only=True)[2] == {first_commit, abort}
    assert result.next_delete_horizon == clock.now  # emptied: the next pass stamps them
    result = cleaner.clean(log, 0, log.log_end_offset, clock.now)
    assert result.next_delete_horizon == clock.now + RETENTION
    assert log.collect_aborted(0, log.log_end_offset)  # the abort marker's entry stays
    clock.now += RETENTION - 1
    cleaner.clean(log, 0, log.log_end_offset, clock.now)
    assert _read(log, model, committed_only=True)[2] == {first_commit, abort}
    clock.now += 1
    cleaner.clean(log, 0, log.log_end_offset, clock.now)
    view, _, markers = _read(log, model, committed_only=True)
    assert (view, markers) == ({b"k": b"v3"}, set())
    assert log.collect_aborted(0, log.log_end_offset) == []
