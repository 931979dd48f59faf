"""The history checker on synthetic histories: each anomaly is seen, clean histories pass,
and indeterminate sends are never counted against the cluster."""

from __future__ import annotations

import struct

from checker import ACKED, FAILED, UNKNOWN, Batch, History, Send, check, diverges
from kafka.record.default_records import DefaultRecordBatchBuilder


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


def _idempotent_batch(base_offset: int, values: list[str], *, epoch: int,
                      sequence: int) -> Batch:
    """A v2 batch of producer 7 as a replica stores it, encoded by kafka-python."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=7,
        producer_epoch=epoch, base_sequence=sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=1000, key=None, value=value.encode(), headers=[])
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)  # the base offset is outside the CRC
    return Batch(base_offset, base_offset + len(values) - 1, bytes(data))


def _written_twice(second_epoch: int, first_outcome: str) -> History:
    """"a" written at offset 1 in a batch with "x", and again at offset 2 on its own; the
    client acknowledged "a" at 2 and gave "x" the outcome ``first_outcome``."""
    log = [_idempotent_batch(0, ["x", "a"], epoch=0, sequence=0),
           _idempotent_batch(2, ["a"], epoch=second_epoch, sequence=1 - second_epoch)]
    history = _history([_send("x", -1, 1.0, outcome=first_outcome), _send("a", 2, 1.1)],
                       {0: [(0, "x"), (1, "a"), (2, "a")]})
    history.replicas = {0: (3, {1: log, 2: list(log)})}
    return history


def test_a_record_the_client_gave_up_and_sent_again_under_a_new_epoch_is_resent():
    """librdkafka after a local message timeout: the records of the batch that did not
    time out yet get sequence numbers again under a bumped epoch, although the batch had
    been written; the broker cannot tell them from new records."""
    report = check(_written_twice(second_epoch=1, first_outcome=FAILED))
    assert report.resent == [b"a"] and report.duplicated == [] and report.ok
    assert "resent=1" in report.summary()


def test_a_record_written_twice_under_one_sequence_is_a_duplicate():
    """The same producer, epoch and sequence twice: idempotence failed in the cluster."""
    report = check(_written_twice(second_epoch=0, first_outcome=FAILED))
    assert report.duplicated == [b"a"] and report.resent == [] and not report.ok


def test_a_new_epoch_without_a_failure_on_the_client_stays_a_duplicate():
    """A client that re-sent without having given anything up was pushed to it by the
    cluster (an OUT_OF_ORDER_SEQUENCE_NUMBER answer to a retry makes librdkafka bump its
    epoch): that counts against the cluster."""
    report = check(_written_twice(second_epoch=1, first_outcome=ACKED))
    assert report.duplicated == [b"a"] and not report.ok
