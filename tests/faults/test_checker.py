"""The history checker on synthetic histories: each anomaly is seen, clean histories pass,
and indeterminate sends are never counted against the cluster."""

from __future__ import annotations

from checker import ACKED, FAILED, UNKNOWN, Batch, History, Send, check, diverges


def _send(value: str, offset: int, at: float, *, partition: int = 0, producer: str = "p",
          outcome: str = ACKED) -> Send:
    return Send(producer, value.encode(), partition, at, outcome, offset, at + 0.01)


def _history(sends: list[Send], reads: dict[int, list[tuple[int, str]]]) -> History:
    return History(sends=sends, reads={p: [(o, v.encode()) for o, v in records]
                                       for p, records in reads.items()})


def test_a_clean_history_passes():
    sends = [_send("a", 0, 1.0), _send("b", 1, 1.1), _send("c", 0, 1.2, partition=1)]
    report = check(_history(sends, {0: [(0, "a"), (1, "b")], 1: [(0, "c")]}))
    assert report.ok and report.acked == 3 and not report.lost


def test_an_acknowledged_record_never_read_is_lost():
    sends = [_send("a", 0, 1.0), _send("b", 1, 1.1)]
    report = check(_history(sends, {0: [(0, "a")]}))
    assert report.lost == [b"b"] and not report.ok


def test_records_below_the_log_start_offset_were_deleted_not_lost():
    history = _history([_send("a", 0, 1.0), _send("b", 1, 1.1)], {0: [(1, "b")]})
    history.log_start = {0: 1}
    assert check(history).ok


def test_failed_and_unfinished_sends_are_indeterminate():
    sends = [_send("a", 0, 1.0), _send("x", -1, 1.1, outcome=FAILED),
             _send("y", -1, 1.2, outcome=UNKNOWN)]
    report = check(_history(sends, {0: [(0, "a"), (1, "x")]}))
    assert report.ok and report.failed == 1 and report.unknown == 1


def test_a_value_read_at_two_offsets_is_a_duplicate():
    report = check(_history([_send("a", 0, 1.0)], {0: [(0, "a"), (1, "a")]}))
    assert report.duplicated == [b"a"]


def test_a_later_send_at_an_earlier_offset_is_reordering():
    sends = [_send("a", 1, 1.0), _send("b", 0, 1.1)]
    report = check(_history(sends, {0: [(0, "b"), (1, "a")]}))
    assert report.reordered == [("p", 0, b"b")]
    other_producer = [_send("a", 1, 1.0), _send("b", 0, 1.1, producer="q")]
    assert check(_history(other_producer, {0: [(0, "b"), (1, "a")]})).ok


def test_one_offset_acknowledged_for_two_values_is_inconsistent():
    sends = [_send("a", 0, 1.0), _send("b", 0, 1.1)]
    report = check(_history(sends, {0: [(0, "b")]}))
    assert report.inconsistent_offsets == [(0, 0)]
    assert report.lost == [b"a"]


def test_an_acknowledged_offset_read_with_another_value_is_inconsistent():
    report = check(_history([_send("a", 0, 1.0)], {0: [(0, "z"), (1, "a")]}))
    assert report.inconsistent_offsets == [(0, 0)]


def _batches(*spans: tuple[int, int, bytes]) -> list[Batch]:
    return [Batch(base, last, data) for base, last, data in spans]


def test_replicas_with_the_same_batches_below_the_high_watermark_agree():
    log = _batches((0, 1, b"x"), (2, 4, b"y"))
    assert not diverges({1: log, 2: list(log), 3: list(log)}, 5)


def test_a_replica_with_another_batch_or_missing_the_tail_diverges():
    log = _batches((0, 1, b"x"), (2, 4, b"y"))
    assert diverges({1: log, 2: _batches((0, 1, b"x"), (2, 4, b"Y"))}, 5)
    assert diverges({1: log, 2: _batches((0, 1, b"x"))}, 5)
    assert diverges({1: log, 2: []}, 5)


def test_retention_on_one_replica_only_compares_what_both_hold():
    log = _batches((0, 1, b"x"), (2, 4, b"y"))
    assert not diverges({1: log, 2: _batches((2, 4, b"y"))}, 5)


def test_divergence_is_reported_per_partition():
    history = _history([], {})
    log = _batches((0, 0, b"x"))
    history.replicas = {0: (1, {1: log, 2: log}), 1: (1, {1: log, 2: _batches((0, 0, b"z"))})}
    assert check(history).divergent == [1]


def test_committed_offsets_going_backwards_are_reported():
    history = _history([], {})
    history.commits = [(1.0, "g", 0, 5), (2.0, "g", 0, 7), (3.0, "g", 0, 3), (3.5, "g", 1, 1),
                       (4.0, "h", 0, 0)]
    assert check(history).offsets_backwards == [("g", 0, 7, 3)]


def test_unavailability_sums_the_long_gaps_between_acknowledgements():
    sends = [_send(str(i), i, t) for i, t in enumerate([0.0, 0.5, 3.5, 3.6, 6.0])]
    report = check(_history(sends, {0: [(i, str(i)) for i in range(5)]}))
    assert abs(report.unavailable_s - (3.0 + 2.4)) < 1e-6
