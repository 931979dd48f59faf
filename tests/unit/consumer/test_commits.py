"""Commit requests and answers, OffsetFetch bodies, the auto-commit timer, async results."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalite.consumer.commits import (
    AutoCommitTimer,
    CommitFailedError,
    CommitResults,
    Verdict,
    committed_offsets,
    first_offset_fetch_error,
    judge_commit,
    offset_commit_request,
    offset_fetch_request,
)
from kafkalite.protocol.errors import (
    IllegalGenerationError,
    NotCoordinatorError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from kafkalite.structs import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from fake_clock import FakeClock


TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def answer(*codes: int) -> dict:
    return {"topics": [{"name": "t", "partitions": [
        {"partition_index": i, "error_code": c} for i, c in enumerate(codes)]}]}


def test_commit_request_groups_partitions_by_topic_with_identity() -> None:
    body = offset_commit_request("g", 4, "m", None, {
        TP0: OffsetAndMetadata(10, "a", 2), TP1: OffsetAndMetadata(11, "", -1),
        TopicPartition("u", 3): OffsetAndMetadata(1, "", -1)})
    assert (body["group_id"], body["generation_id_or_member_epoch"], body["member_id"]) == (
        "g", 4, "m")
    topics = {t["name"]: t["partitions"] for t in body["topics"]}
    assert [p["partition_index"] for p in topics["t"]] == [0, 1]
    assert topics["t"][0] == {"partition_index": 0, "committed_offset": 10,
                              "committed_leader_epoch": 2, "committed_metadata": "a"}
    assert [p["partition_index"] for p in topics["u"]] == [3]


def test_judging_commit_answers() -> None:
    assert judge_commit(answer(0, 0), "g", 3).verdict is Verdict.OK
    for code in (IllegalGenerationError.errno, UnknownMemberIdError.errno):
        outcome = judge_commit(answer(0, code), "g", 3)
        assert outcome.verdict is Verdict.FENCED and outcome.code == code
        assert isinstance(outcome.error, CommitFailedError)
        assert "generation 3" in str(outcome.error)
    outcome = judge_commit(answer(RebalanceInProgressError.errno), "g", 3)
    assert outcome.verdict is Verdict.REBALANCING
    assert isinstance(outcome.error, CommitFailedError)
    outcome = judge_commit(answer(NotCoordinatorError.errno), "g", 3)
    assert outcome.verdict is Verdict.COORDINATOR_MOVED and outcome.error.retriable
    outcome = judge_commit(answer(0, OffsetMetadataTooLargeError.errno), "g", 3)
    assert outcome.verdict is Verdict.OTHER
    assert isinstance(outcome.error, OffsetMetadataTooLargeError)
    assert "t" in str(outcome.error) and "'g'" in str(outcome.error)


def test_auto_commit_timer_on_a_fake_clock(clock: FakeClock) -> None:
    timer = AutoCommitTimer(True, 5000, clock)
    assert not timer.due()
    clock.advance(5)
    assert timer.due() and not timer.due()  # the next one is scheduled
    clock.advance(4)
    timer.reset()  # a new assignment: a full interval from now
    clock.advance(4)
    assert not timer.due()
    clock.advance(1)
    assert timer.due()
    disabled = AutoCommitTimer(False, 5000, clock)
    clock.advance(60)
    assert not disabled.due()


def test_async_results_run_in_order_on_the_callers_thread() -> None:
    seen = []
    results = CommitResults("g")
    results.add(lambda offsets, error: seen.append((dict(offsets), error)), {TP0: 1}, None)
    failure = CommitFailedError("refused")
    results.add(None, {TP1: 2}, failure)
    results.add(lambda offsets, error: seen.append((dict(offsets), error)), {TP1: 3}, failure)
    assert seen == []
    results.run()
    assert seen == [({TP0: 1}, None), ({TP1: 3}, failure)]
    results.run()
    assert len(seen) == 2


def test_offset_fetch_bodies_and_answers() -> None:
    assert offset_fetch_request("g", None) == {
        "group_id": "g", "topics": None, "groups": [{"group_id": "g", "topics": None}]}
    topics = [{"name": "t", "partition_indexes": [0, 1]}, {"name": "u", "partition_indexes": [2]}]
    assert offset_fetch_request("g", [TP1, TP0, TopicPartition("u", 2)]) == {
        "group_id": "g", "topics": topics, "groups": [{"group_id": "g", "topics": topics}]}
    body = {"error_code": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 7, "metadata": None,
         "committed_leader_epoch": 1, "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "metadata": "",
         "committed_leader_epoch": -1, "error_code": 0}]}]}
    assert first_offset_fetch_error(body) == 0
    assert committed_offsets(body) == {TP0: OffsetAndMetadata(7, "", 1)}
    body["topics"][0]["partitions"][1]["error_code"] = 16
    assert first_offset_fetch_error(body) == 16
    body["error_code"] = 15
    assert first_offset_fetch_error(body) == 15
    # v8+ answers in a list of groups: the one group asked about is read the same way
    grouped = {"groups": [{"group_id": "g", "error_code": 0, "topics": body["topics"]}]}
    assert committed_offsets(grouped) == {TP0: OffsetAndMetadata(7, "", 1)}
    assert first_offset_fetch_error(grouped) == 16
