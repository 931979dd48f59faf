"""Idempotent producers: duplicates return original offsets, gaps and old epochs fail."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from log_batches import v2_batch

from kafkalite.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.log.producer_snapshot import SnapshotBatch, decode_snapshot, encode_snapshot

PID = 4242


def _batch(sequence: int, count: int = 3, epoch: int = 0) -> bytearray:
    return v2_batch(count, producer_id=PID, producer_epoch=epoch, base_sequence=sequence)


def test_retried_batch_returns_original_offsets_without_appending(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(v2_batch(2), leader_epoch=0)
    first = log.append_as_leader(_batch(0), leader_epoch=0)
    log.append_as_leader(_batch(3), leader_epoch=0)
    retry = log.append_as_leader(_batch(0), leader_epoch=0)
    assert (retry.first_offset, retry.last_offset, retry.duplicate) == (2, 4, True)
    assert not first.duplicate
    assert log.log_end_offset == 8


def test_only_the_last_five_batches_are_remembered(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    for i in range(6):
        log.append_as_leader(_batch(3 * i), leader_epoch=0)
    assert log.append_as_leader(_batch(3), leader_epoch=0).duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(_batch(0), leader_epoch=0)


def test_sequence_gap_is_rejected(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(_batch(0), leader_epoch=0)
    with pytest.raises(OutOfOrderSequenceNumberError, match="expected 3"):
        log.append_as_leader(_batch(4), leader_epoch=0)
    assert log.log_end_offset == 3


def test_epochs_fence_and_restart_sequences(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(_batch(0, epoch=2), leader_epoch=0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(_batch(3, epoch=1), leader_epoch=0)
    with pytest.raises(OutOfOrderSequenceNumberError, match="not 0"):
        log.append_as_leader(_batch(3, epoch=3), leader_epoch=0)
    assert not log.append_as_leader(_batch(0, epoch=3), leader_epoch=0).duplicate


def test_state_is_rebuilt_from_the_log_on_reopen(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(_batch(0), leader_epoch=0)
    log.append_as_leader(_batch(3), leader_epoch=0)
    log.close()
    reopened = Log.open(tmp_path / "t-0", LogConfig(), clean_shutdown=True)
    retry = reopened.append_as_leader(_batch(3), leader_epoch=0)
    assert (retry.first_offset, retry.duplicate) == (3, True)
    with pytest.raises(OutOfOrderSequenceNumberError):
        reopened.append_as_leader(_batch(9), leader_epoch=0)


def _replicate(leader: Log, follower: Log) -> None:
    """The follower fetches until it holds the leader's log (one segment per read)."""
    for _ in range(100):
        if follower.log_end_offset == leader.log_end_offset:
            return
        region = leader.read(follower.log_end_offset, 1 << 20)
        assert region is not None
        follower.append_as_follower(bytearray(region.read_bytes()))
    raise AssertionError("the follower did not catch up")


@pytest.mark.parametrize("reload", ["truncation", "restart"])
def test_a_reloaded_replica_still_answers_retries_of_the_last_five_batches(
        tmp_path: Path, reload: str) -> None:
    """A follower that reloads its producer state from a snapshot (after a truncation, or
    an unclean restart) and then leads must answer a retry of any of the producer's last
    five batches with the offsets they got, not refuse it as out of order: librdkafka
    answers OUT_OF_ORDER_SEQUENCE_NUMBER by bumping its epoch and re-sending what it still
    holds under new sequences, which writes those records a second time."""
    config = LogConfig(segment_bytes=150)  # a roll, and so a snapshot, after every batch
    leader = Log.open(tmp_path / "leader" / "t-0", config)
    first = [leader.append_as_leader(_batch(3 * i), leader_epoch=0) for i in range(7)]
    follower = Log.open(tmp_path / "follower" / "t-0", config)
    _replicate(leader, follower)
    if reload == "truncation":
        follower.truncate_to(first[6].first_offset)  # the last batch was not committed
    else:
        follower = Log.open(tmp_path / "follower" / "t-0", config)  # SIGKILL: no close
        follower.truncate_to(first[6].first_offset)
    end = follower.log_end_offset
    for i in range(1, 6):
        retry = follower.append_as_leader(_batch(3 * i), leader_epoch=1)
        assert (retry.duplicate, retry.first_offset, retry.last_offset) == (
            True, first[i].first_offset, first[i].last_offset), i
    assert follower.log_end_offset == end
    resent = follower.append_as_leader(_batch(18), leader_epoch=1)
    assert (resent.duplicate, resent.first_offset) == (False, end)


def test_kafka_format_snapshots_are_still_read() -> None:
    """Version 1 files (Kafka's, one batch per producer) written before version 2 load."""
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", PID, 3, 11, 40, 2, 1000, 5, -1)
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    (entry,) = decode_snapshot(data)
    assert entry.batches == (SnapshotBatch(9, 11, 38, 40),)
    assert (entry.epoch, entry.timestamp, entry.coordinator_epoch) == (3, 1000, 5)
    assert decode_snapshot(encode_snapshot([entry])) == [entry]
