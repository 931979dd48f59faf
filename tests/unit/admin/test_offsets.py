"""ListOffsets, DeleteRecords, OffsetFetch, OffsetCommit and OffsetDelete as pure pairs,
and reset_group_offsets' target rules."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite.admin.lookup import GivenBroker, PartitionLeader
from kafkalite.admin.offsets import (
    CommitGroupOffsets,
    DeleteGroupOffsets,
    DeleteRecords,
    FetchGroupOffsets,
    ListOffsets,
    OffsetSpec,
    OffsetTimestamp,
    clamp,
    raise_refusals,
    split_reset_targets,
)
from kafkalite.errors import NoError
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from kafkalite.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))
AUDIT = TopicPartition("audit", 0)


def partitions_answer(**by_partition: dict[str, Any]) -> dict[str, Any]:
    return {"topics": [{"name": "orders", "partitions": [
        {"partition_index": int(p.removeprefix("p")), **fields}
        for p, fields in by_partition.items()]}]}


def test_list_offsets_pair_with_partial_errors() -> None:
    handler = ListOffsets({T0: -1, T1: 1700000000000, T2: -2}, isolation_level=1)
    assert isinstance(handler.lookup, PartitionLeader)
    assert handler.build_request(0, [T0, T1]).body == {
        "replica_id": -1, "isolation_level": 1, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1},
            {"partition_index": 1, "current_leader_epoch": -1,
             "timestamp": 1700000000000}]}]}
    outcome = handler.handle_response(0, [T0, T1, T2], partitions_answer(
        p0={"error_code": 0, "timestamp": -1, "offset": 42},
        p1={"error_code": 0, "timestamp": -1, "offset": -1},
        p2={"error_code": NotLeaderOrFollowerError.errno, "timestamp": -1, "offset": -1}))
    assert outcome.completed == {T0: OffsetAndTimestamp(42, -1), T1: None}
    assert list(outcome.look_up_again) == [T2]


def test_list_offsets_waits_out_an_election_and_stops_at_an_unknown_partition() -> None:
    outcome = ListOffsets({T0: -1, T1: -1}).handle_response(0, [T0, T1], partitions_answer(
        p0={"error_code": OffsetNotAvailableError.errno, "timestamp": -1, "offset": -1},
        p1={"error_code": UnknownTopicOrPartitionError.errno, "timestamp": -1, "offset": -1}))
    assert list(outcome.retry) == [T0]
    assert isinstance(outcome.failed[T1], UnknownTopicOrPartitionError)
    assert "listing offsets of orders-1" in str(outcome.failed[T1])


def test_delete_records_keeps_refusals_as_answers_and_routes_moved_leaders() -> None:
    handler = DeleteRecords({T0: 3, T1: -1, AUDIT: 9}, 2000)
    assert handler.build_request(1, [T1, AUDIT, T0]).body == {"topics": [
        {"name": "audit", "partitions": [{"partition_index": 0, "offset": 9}]},
        {"name": "orders", "partitions": [{"partition_index": 0, "offset": 3},
                                          {"partition_index": 1, "offset": -1}]}],
        "timeout_ms": 2000}
    outcome = handler.handle_response(1, [T0, T1], partitions_answer(
        p0={"low_watermark": 3, "error_code": 0},
        p1={"low_watermark": -1, "error_code": NotLeaderOrFollowerError.errno}))
    assert outcome.completed == {T0: {"partition_index": 0, "low_watermark": 3,
                                      "error_code": 0}}
    assert list(outcome.look_up_again) == [T1]
    assert isinstance(DeleteRecords({}, 1, leader=5).lookup, GivenBroker)


def test_refused_deletions_raise_the_first_naming_how_many_more() -> None:
    raise_refusals({T0: {"error_code": 0}})
    with pytest.raises(OffsetOutOfRangeError,
                       match=r"deleting records of orders-1 \(and 1 more partitions\)"):
        raise_refusals({T2: {"error_code": OffsetOutOfRangeError.errno},
                        T1: {"error_code": OffsetOutOfRangeError.errno},
                        T0: {"error_code": 0}})


def test_offset_fetch_pair() -> None:
    handler = FetchGroupOffsets([T1, T0])
    topics = [{"name": "orders", "partition_indexes": [0, 1]}]
    assert handler.build_request(0, ["g"]).body == {
        "group_id": "g", "topics": topics, "groups": [{"group_id": "g", "topics": topics}]}
    assert FetchGroupOffsets(None).build_request(0, ["g"]).body == {
        "group_id": "g", "topics": None, "groups": [{"group_id": "g", "topics": None}]}
    body = {"error_code": 0, "topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 2,
         "metadata": "m", "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1,
         "metadata": "", "error_code": 0}]}]}
    assert handler.handle_response(0, ["g"], body).completed == {
        "g": {T0: OffsetAndMetadata(5, "m", 2)}}
    moved = handler.handle_response(0, ["g"], {"error_code": NotCoordinatorError.errno,
                                               "topics": []})
    assert list(moved.look_up_again) == ["g"]


def test_offset_commit_pair_reports_each_partition_and_routes_a_moved_coordinator() -> None:
    handler = CommitGroupOffsets({T1: 7, T0: OffsetAndMetadata(3, None, 1)})  # type: ignore[arg-type]
    body = handler.build_request(0, ["g"]).body
    assert (body["group_id"], body["generation_id_or_member_epoch"], body["member_id"]) == \
        ("g", -1, "")
    assert body["topics"] == [{"name": "orders", "partitions": [
        {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": 1,
         "committed_metadata": ""},
        {"partition_index": 1, "committed_offset": 7, "committed_leader_epoch": -1,
         "committed_metadata": ""}]}]
    outcome = handler.handle_response(0, ["g"], partitions_answer(
        p0={"error_code": 0}, p1={"error_code": GroupIdNotFoundError.errno}))
    assert outcome.completed == {"g": {T0: NoError, T1: GroupIdNotFoundError}}
    loading = handler.handle_response(0, ["g"], partitions_answer(
        p0={"error_code": CoordinatorLoadInProgressError.errno},
        p1={"error_code": CoordinatorLoadInProgressError.errno}))
    assert list(loading.retry) == ["g"] and not loading.completed


def test_offset_delete_pair() -> None:
    handler = DeleteGroupOffsets([T0, AUDIT])
    assert handler.build_request(0, ["g"]).body == {"group_id": "g", "topics": [
        {"name": "audit", "partitions": [{"partition_index": 0}]},
        {"name": "orders", "partitions": [{"partition_index": 0}]}]}
    answer = partitions_answer(p0={"error_code": GroupSubscribedToTopicError.errno})
    assert handler.handle_response(0, ["g"], {"error_code": 0, **answer}).completed == {
        "g": {T0: GroupSubscribedToTopicError}}
    refused = handler.handle_response(0, ["g"], {"error_code": GroupIdNotFoundError.errno,
                                                 "topics": []})
    assert isinstance(refused.failed["g"], GroupIdNotFoundError)


def test_reset_targets_split_by_kind_and_clamp_to_the_partition() -> None:
    lookups, explicit = split_reset_targets({T0: OffsetSpec.EARLIEST,
                                             T1: OffsetTimestamp(1700000000000), T2: 12})
    assert lookups == {T0: -2, T1: 1700000000000} and explicit == {T2: 12}
    with pytest.raises(TypeError, match="reset target of orders-0: '5' is not"):
        split_reset_targets({T0: "5"})  # type: ignore[dict-item]
    assert [clamp(raw, 10, 20) for raw in (-1, 5, 15, 25)] == [20, 10, 15, 20]
    assert repr(OffsetTimestamp(5)) == "OffsetTimestamp(5)"
