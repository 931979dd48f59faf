"""The log's side of transactions: markers, last stable offset, the aborted-transaction
index, producer-state snapshots and recovery."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kafkalite.protocol.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from kafkalite.records import RecordBatchBuilder
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.log.producer_snapshot import (
    CorruptSnapshotError,
    decode_snapshot,
    snapshot_offsets,
)
from kafkalite_server.log.transaction_index import ENTRY, AbortedTxn, TransactionIndex


def txn_batch(pid: int, sequence: int, count: int = 2, epoch: int = 0,
              transactional: bool = True) -> bytearray:
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                                 is_transactional=transactional)
    for i in range(count):
        builder.append(1_000 + i, None, f"{pid}-{sequence + i}".encode())
    return bytearray(builder.build())


def test_open_transactions_hold_the_last_stable_offset(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(txn_batch(1, 0), leader_epoch=0)  # 0-1
    log.append_as_leader(txn_batch(2, 0), leader_epoch=0)  # 2-3
    assert log.last_stable_offset(log.log_end_offset) == 0
    log.append_marker(1, 0, 0, True, leader_epoch=0)  # 4
    assert log.last_stable_offset(log.log_end_offset) == 2
    log.append_marker(2, 0, 0, False, leader_epoch=0)  # 5
    assert log.last_stable_offset(log.log_end_offset) == 6
    assert log.last_stable_offset(3) == 3  # never above the high watermark
    assert log.collect_aborted(0, 6) == [AbortedTxn(2, 2, 5, 6)]
    assert log.collect_aborted(6, 10) == []
    assert log.active_segment.txn_index.path.read_bytes() == AbortedTxn(2, 2, 5, 6).encode()
    assert len(log.active_segment.txn_index.path.read_bytes()) == ENTRY.size == 34


def test_stale_markers_and_bad_batches_are_refused_and_change_nothing(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(txn_batch(1, 0, epoch=3), leader_epoch=0)
    end = log.log_end_offset
    with pytest.raises(InvalidProducerEpochError):
        log.append_marker(1, 2, 0, True, leader_epoch=0)
    log.append_marker(1, 3, 5, False, leader_epoch=0)
    log.append_as_leader(txn_batch(1, 2, epoch=3), leader_epoch=0)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_marker(1, 3, 4, True, leader_epoch=0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn_batch(1, 4, epoch=3, transactional=False), leader_epoch=0)
    assert log.log_end_offset == end + 1 + 2
    assert log.last_stable_offset(log.log_end_offset) == end + 1


def test_markers_and_open_transactions_survive_restart_through_snapshots(tmp_path: Path) -> None:
    config = dataclasses.replace(LogConfig(), segment_bytes=300)
    log = Log.open(tmp_path / "t-0", config)
    log.append_as_leader(txn_batch(7, 0), leader_epoch=0)  # open across rolls
    for i in range(6):
        log.append_as_leader(txn_batch(8, 2 * i, transactional=False), leader_epoch=0)
    assert len(log.segments) > 1 and snapshot_offsets(log.directory)
    log.append_as_leader(txn_batch(9, 0), leader_epoch=0)
    log.append_marker(9, 0, 0, False, leader_epoch=0)
    end = log.log_end_offset
    log.close()
    reopened = Log.open(tmp_path / "t-0", config, clean_shutdown=True)
    assert reopened.last_stable_offset(end) == 0  # producer 7 still open
    assert reopened.producer_state.ongoing == {7: 0}
    assert [t.producer_id for t in reopened.collect_aborted(0, end)] == [9]
    reopened.append_marker(7, 0, 0, True, leader_epoch=0)
    assert reopened.last_stable_offset(reopened.log_end_offset) == reopened.log_end_offset


def test_unclean_restart_without_snapshots_rebuilds_state_and_a_lost_index_entry(
        tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(txn_batch(1, 0), leader_epoch=0)
    log.append_marker(1, 0, 0, False, leader_epoch=0)
    log.append_as_leader(txn_batch(2, 0), leader_epoch=0)
    log.flush()
    directory = log.directory
    # a crash: no close(), no snapshot; the index entry never reached the disk
    log.active_segment.txn_index.path.unlink()
    reopened = Log.open(directory, LogConfig(), recovery_point=0)
    assert reopened.collect_aborted(0, 100) == [AbortedTxn(1, 0, 2, 3)]
    assert reopened.producer_state.ongoing == {2: 3}


def test_truncation_reopens_a_transaction_whose_marker_was_cut(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(txn_batch(1, 0), leader_epoch=0)
    log.append_marker(1, 0, 0, False, leader_epoch=0)
    log.truncate_to(2)
    assert log.producer_state.ongoing == {1: 0}
    assert log.collect_aborted(0, 10) == []


def test_corrupt_index_and_snapshot_files_are_detected(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(b"\x00" * 33)
    assert TransactionIndex(path).problem is not None and not path.exists()
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01")
