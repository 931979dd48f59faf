"""Producer ids expire after ``producer.id.expiration.ms`` (issue 30, item 12.3), with a
fake clock: in memory, in the snapshots written afterwards, and when a log loads."""

from __future__ import annotations

from pathlib import Path

from fake_clock import FakeClock as Clock
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalite.records.control import encode_marker
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.log.producer_snapshot import decode_snapshot, snapshot_offsets, snapshot_path

EXPIRATION = 1_000
START = 1_000_000
CONFIG = LogConfig(segment_bytes=1 << 20)


def _idempotent(producer_id: int, sequence: int, timestamp: int,
                transactional: bool = False) -> bytearray:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=0, base_sequence=sequence, batch_size=1 << 20)
    builder.append(0, timestamp=timestamp, key=None, value=b"v", headers=[])
    return bytearray(builder.build())


def _open(directory: Path, clock: Clock, expiration: int | None = EXPIRATION) -> Log:
    return Log.open(directory, CONFIG, now_ms=clock, clean_shutdown=True,
                    producer_expiration_ms=expiration)


def test_idle_producers_expire_but_never_one_in_a_transaction(tmp_path: Path) -> None:
    clock = Clock(START)
    log = _open(tmp_path / "t-0", clock)
    log.append_as_leader(_idempotent(1, 0, START), leader_epoch=0)
    log.append_as_leader(_idempotent(2, 0, START + 500), leader_epoch=0)
    log.append_as_leader(_idempotent(3, 0, START, transactional=True), leader_epoch=0)
    clock.now = START + EXPIRATION - 1
    assert log.remove_expired_producers() == 0
    clock.now = START + EXPIRATION  # producer 1 is exactly that idle: Kafka's >=
    assert log.remove_expired_producers() == 1
    assert sorted(log.producer_state.producers) == [2, 3]
    clock.now = START + 10 * EXPIRATION
    assert log.remove_expired_producers() == 1
    assert sorted(log.producer_state.producers) == [3]  # its transaction is still open
    log.append_marker(3, 0, 0, commit=True, leader_epoch=0)  # stamped with clock.now
    clock.now += EXPIRATION
    assert log.remove_expired_producers() == 1 and log.producer_state.producers == {}
    # an expired producer's next batch starts it afresh (not OUT_OF_ORDER_SEQUENCE)
    assert log.append_as_leader(_idempotent(1, 7, clock.now), leader_epoch=0).first_offset
    log.close()


def test_snapshots_leave_expired_producers_out_and_a_load_drops_them(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    clock = Clock(START)
    log = _open(directory, clock, expiration=None)  # never expires: both in the snapshot
    log.append_as_leader(_idempotent(1, 0, START), leader_epoch=0)
    log.append_as_leader(_idempotent(2, 0, START + 5 * EXPIRATION), leader_epoch=0)
    log.close()
    written = decode_snapshot(snapshot_path(directory, 2).read_bytes())
    assert sorted(entry.producer_id for entry in written) == [1, 2]

    clock.now = START + 5 * EXPIRATION
    reopened = _open(directory, clock)  # producer 1 is past expiry when the log loads
    assert sorted(reopened.producer_state.producers) == [2]
    reopened.append_as_leader(_idempotent(2, 1, clock.now), leader_epoch=0)
    reopened.roll()  # a snapshot at the roll: without producer 1
    rolled = decode_snapshot(snapshot_path(directory, 3).read_bytes())
    assert [entry.producer_id for entry in rolled] == [2]
    reopened.close()
    assert snapshot_offsets(directory)[-1] == 3


def test_a_marker_only_producer_and_replayed_batches_expire_too(tmp_path: Path) -> None:
    """Replay (no snapshot) rebuilds entries from the batches; expired ones go at load."""
    directory = tmp_path / "t-0"
    clock = Clock(START)
    log = _open(directory, clock, expiration=None)
    log.append_as_leader(_idempotent(5, 0, START), leader_epoch=0)
    log.append_as_follower(_stamped(encode_marker(6, 0, 0, False, START), 1))
    log.close()
    for path in directory.glob("*.snapshot"):
        path.unlink()
    clock.now = START + EXPIRATION
    reopened = _open(directory, clock)
    assert reopened.producer_state.producers == {}
    reopened.close()


def _stamped(batch: bytes, offset: int) -> bytearray:
    """A batch with its base offset set (as a leader assigns it)."""
    stamped = bytearray(batch)
    stamped[0:8] = offset.to_bytes(8, "big")
    return stamped
