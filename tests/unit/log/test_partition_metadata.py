"""``partition.metadata`` (KIP-516): the topic id of a partition directory, in Kafka's
format, and the LogManager's handling of a directory left by a deleted topic."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from log_batches import v2_batch

from kafkalite.protocol.errors import InconsistentTopicIdError, KafkaStorageError
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.manager import LogManager
from kafkalite_server.log.partition_metadata import (
    CorruptPartitionMetadataError,
    read_topic_id,
    write_topic_id,
)
from kafkalite_server.topic_ids import new_topic_id

CONFIG = LogConfig(file_delete_delay_ms=0)
OLD, NEW = new_topic_id(), new_topic_id()


def test_the_file_is_kafkas_two_lines(tmp_path: Path) -> None:
    known = uuid.UUID(int=1)  # Kafka's Uuid.toString of it is "AAAAAAAAAAAAAAAAAAAAAQ"
    write_topic_id(tmp_path, known)
    assert (tmp_path / "partition.metadata").read_text() == (
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    assert read_topic_id(tmp_path) == known
    assert read_topic_id(tmp_path / "nothing-here") is None


@pytest.mark.parametrize("text", ["version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n",
                                  "version: 0\n", "version: 0\ntopic_id: short\n",
                                  "garbage\n"])
def test_a_damaged_file_is_a_named_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "partition.metadata").write_text(text)
    with pytest.raises(CorruptPartitionMetadataError, match=r"partition\.metadata"):
        read_topic_id(tmp_path)


def test_a_log_learns_its_topic_id_once_and_keeps_it_across_a_restart(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG)
    manager.create_log("t", 0)  # a directory from before topics had ids
    assert manager.topic_id_of("t", 0) is None
    manager.create_log("t", 0, topic_id=OLD)
    assert read_topic_id(tmp_path / "t-0") == OLD
    manager.shutdown()
    restarted = LogManager([tmp_path], CONFIG)
    assert restarted.topic_id_of("t", 0) == OLD
    with pytest.raises(InconsistentTopicIdError, match="t-0"):
        restarted.create_log("t", 0, topic_id=NEW)
    restarted.shutdown()


def test_a_deleted_topics_directory_is_set_aside_and_never_loaded_again(
        tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG)
    manager.create_log("t", 0, topic_id=OLD).append_as_leader(v2_batch(3), leader_epoch=0)
    manager.shutdown()
    restarted = LogManager([tmp_path], CONFIG)
    assert not restarted.set_aside_stray("t", 0, OLD)  # the same topic: kept
    assert restarted.set_aside_stray("t", 0, NEW)
    assert restarted.get_log("t", 0) is None
    stray = tmp_path / f"t-0.{OLD.hex}-stray"
    assert read_topic_id(stray) == OLD and any(stray.glob("*.log"))
    fresh = restarted.create_log("t", 0, topic_id=NEW)
    assert fresh.log_end_offset == 0 and read_topic_id(tmp_path / "t-0") == NEW
    restarted.shutdown()
    again = LogManager([tmp_path], CONFIG)
    assert [log.directory.name for log in again.all_logs()] == ["t-0"]
    assert again.topic_id_of("t", 0) == NEW and stray.exists()
    again.shutdown()


def test_a_damaged_file_refuses_the_replica_with_a_storage_error(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG)
    manager.create_log("t", 0)
    (tmp_path / "t-0" / "partition.metadata").write_text("version: 7\n")
    with pytest.raises(KafkaStorageError, match="unsupported version"):
        manager.create_log("t", 0, topic_id=NEW)
    manager.shutdown()
