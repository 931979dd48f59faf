"""Checkpoint files: Kafka's exact text format, round trips, typed errors naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite_server.log.checkpoint import (
    CorruptCheckpointError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)


def test_offset_checkpoint_text_and_round_trip(tmp_path: Path) -> None:
    file = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    offsets = {("orders", 1): 1432, ("orders", 0): 1500, ("my-topic", 3): 0}
    file.write(offsets)
    assert file.path.read_text() == "0\n3\nmy-topic 3 0\norders 0 1500\norders 1 1432\n"
    assert file.read() == offsets
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_leader_epoch_checkpoint_text_and_round_trip(tmp_path: Path) -> None:
    file = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    file.write([(0, 0), (2, 418), (5, 913)])
    assert file.path.read_text() == "0\n3\n0 0\n2 418\n5 913\n"
    assert file.read() == [(0, 0), (2, 418), (5, 913)]


def test_missing_file_reads_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "absent").read() == {}


@pytest.mark.parametrize(("text", "line", "problem"), [
    ("", 1, "missing version"),
    ("1\n0\n", 1, "unsupported version"),
    ("0\n", 2, "missing entry count"),
    ("0\nx\n", 2, "not an integer"),
    ("0\n2\norders 0 5\n", 2, "says 2 entries, found 1"),
    ("0\n1\norders 0\n", 3, "expected 3 fields"),
    ("0\n1\norders zero 5\n", 3, "malformed entry"),
])
def test_malformed_files_name_file_and_line(tmp_path: Path, text: str, line: int,
                                            problem: str) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError, match=problem) as caught:
        OffsetCheckpointFile(path).read()
    assert caught.value.line_number == line
    assert str(path) in str(caught.value)
