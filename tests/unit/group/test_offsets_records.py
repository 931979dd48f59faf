"""Coordinator state -> __consumer_offsets records -> replay, through real v2 batches."""

import struct

from kafkalite.protocol.offsets_topic import decode_offset_commit_value
from kafkalite.records import decode_batches, encode_batch
from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition
from kafkalite_server.group.offsets_records import (
    KeyValue,
    OffsetsReplay,
    group_metadata_record,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)
from kafkalite_server.group.store import GroupMetadataRecord, MemberRecord

TP = TopicPartition("orders", 3)
MEMBER = MemberRecord("m-1", None, "client", "/127.0.0.1", 300_000, 10_000, b"sub", b"assign")


def replay(*entries: KeyValue) -> OffsetsReplay:
    """Write the entries as one real record batch and replay what decodes back."""
    batch = encode_batch((key, value, 1000, ()) for key, value in entries)
    result = OffsetsReplay()
    result.feed(decode_batches(batch))
    return result


def test_offsets_and_group_round_trip() -> None:
    committed = OffsetAndMetadata(42, 5, "note", 1234)
    group = GroupMetadataRecord("consumer", 7, "range", "m-1", 999, [MEMBER])
    result = replay(offset_commit_record("g", TP, committed), group_metadata_record("g", group))
    [loaded] = result.loaded_groups()
    assert loaded.group_id == "g"
    assert loaded.offsets == {TP: committed}
    assert loaded.metadata == group


def test_value_versions_follow_kafka() -> None:
    plain = offset_commit_record("g", TP, OffsetAndMetadata(1, 2, "", 3))[1]
    expiring = offset_commit_record("g", TP, OffsetAndMetadata(1, 2, "", 3, 9))[1]
    assert plain is not None and expiring is not None
    assert struct.unpack(">h", plain[:2])[0] == 3
    assert struct.unpack(">h", expiring[:2])[0] == 1
    assert decode_offset_commit_value(expiring)["expire_timestamp"] == 9
    [loaded] = replay(
        offset_commit_record("g", TP, OffsetAndMetadata(1, -1, "", 3, 9))
    ).loaded_groups()
    assert loaded.offsets[TP].expire_timestamp_ms == 9


def test_last_value_wins_and_tombstones_delete() -> None:
    other = TopicPartition("orders", 4)
    result = replay(
        offset_commit_record("g", TP, OffsetAndMetadata(1, -1, "", 1)),
        offset_commit_record("g", other, OffsetAndMetadata(5, -1, "", 1)),
        offset_commit_record("g", TP, OffsetAndMetadata(2, -1, "", 2)),
        offset_tombstone("g", other),
    )
    [loaded] = result.loaded_groups()
    assert {tp: o.offset for tp, o in loaded.offsets.items()} == {TP: 2}


def test_deleted_group_is_gone() -> None:
    group = GroupMetadataRecord("consumer", 1, None, None, 0, [])
    result = replay(
        group_metadata_record("g", group),
        offset_commit_record("g", TP, OffsetAndMetadata(1, -1, "", 1)),
        offset_tombstone("g", TP),
        group_tombstone("g"),
    )
    assert result.loaded_groups() == []


def test_unknown_key_versions_and_garbage_are_skipped() -> None:
    kip848_key = struct.pack(">h", 3) + b"\x00\x01g"
    result = replay(
        (kip848_key, b"whatever"),
        (struct.pack(">h", 1) + b"\x00", b"truncated key"),
        offset_commit_record("g", TP, OffsetAndMetadata(8, -1, "", 1)),
    )
    [loaded] = result.loaded_groups()
    assert loaded.offsets[TP].offset == 8
    assert result.skipped == 1
