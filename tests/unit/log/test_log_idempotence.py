"""Idempotent producers: duplicates return original offsets, gaps and old epochs fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_batches import v2_batch

from kafkalite.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log

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
