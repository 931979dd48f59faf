"""CreateTopics, DeleteTopics and CreatePartitions as pure request/response pairs, and the
argument forms create_topics and create_partitions take (kafka-python 3's included)."""

from __future__ import annotations

import uuid

import pytest

from kafkalite.admin.handler import ApiResult
from kafkalite.admin.lookup import Controller
from kafkalite.admin.topics import (
    CreatePartitions,
    CreateTopics,
    DeleteTopics,
    NewPartitions,
    NewTopic,
    as_new_partitions,
    as_new_topics,
)
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    InvalidPartitionsError,
    NotControllerError,
    TopicAlreadyExistsError,
)


def test_create_topics_takes_kafka_python_3s_dict_form() -> None:
    [orders, audit] = as_new_topics({
        "orders": {"num_partitions": 3, "replication_factor": 1,
                   "assignments": {0: [1]}, "configs": {"retention.ms": "1000"}},
        "audit": {}})
    assert orders == NewTopic("orders", 3, 1, {0: [1]}, {"retention.ms": "1000"})
    assert audit == NewTopic("audit")
    assert (audit.num_partitions, audit.replication_factor) == (-1, -1)


def test_create_topics_takes_names_and_new_topics_mixed() -> None:
    assert as_new_topics(["a", NewTopic("b", 2, 1)]) == [NewTopic("a"), NewTopic("b", 2, 1)]


@pytest.mark.parametrize(("topics", "error", "message"), [
    ("orders", TypeError, "not the string 'orders'"),
    ([3], TypeError, "3 is neither a NewTopic nor a topic name"),
    ({"orders": 3}, TypeError, "options of topic 'orders' must be a dict"),
    ({"orders": {"partitions": 3}}, ValueError, "unknown options partitions"),
])
def test_a_wrong_topic_form_is_refused_naming_it(topics: object, error: type[Exception],
                                                message: str) -> None:
    with pytest.raises(error, match=message):
        as_new_topics(topics)  # type: ignore[arg-type]


def test_create_partitions_takes_counts_dicts_and_new_partitions() -> None:
    assert as_new_partitions({"a": 4, "b": {"count": 3, "assignments": [[1], [2]]},
                              "c": NewPartitions(2)}) == {
        "a": NewPartitions(4), "b": NewPartitions(3, [[1], [2]]), "c": NewPartitions(2)}
    with pytest.raises(TypeError, match="topic 'a' needs NewPartitions"):
        as_new_partitions({"a": "4"})  # type: ignore[dict-item]


def test_create_topics_request_asks_the_controller() -> None:
    handler = CreateTopics([NewTopic("a", 2, 1, {0: [1, 2]}, {"cleanup.policy": "compact"}),
                            NewTopic("b")], 5000, True)
    assert isinstance(handler.lookup, Controller)
    request = handler.build_request(0, ["b", "a"])
    assert request.api_key is ApiKey.CREATE_TOPICS
    assert request.body == {"topics": [
        {"name": "b", "num_partitions": -1, "replication_factor": -1, "assignments": [],
         "configs": []},
        {"name": "a", "num_partitions": 2, "replication_factor": 1,
         "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
         "configs": [{"name": "cleanup.policy", "value": "compact"}]}],
        "timeout_ms": 5000, "validate_only": True}


def answer(*entries: tuple[str, int, str | None]) -> dict[str, object]:
    return {"throttle_time_ms": 0, "topics": [
        {"name": name, "error_code": code, "error_message": message}
        for name, code, message in entries]}


def test_create_topics_answer_with_partial_errors() -> None:
    handler = CreateTopics([NewTopic("a"), NewTopic("b"), NewTopic("c")], 5000, False)
    outcome = handler.handle_response(0, ["a", "b", "c"], answer(
        ("a", 0, None), ("b", TopicAlreadyExistsError.errno, "topic 'b' already exists"),
        ("c", NotControllerError.errno, None)))
    assert outcome.completed == {"a": {"name": "a", "error_code": 0, "error_message": None}}
    assert isinstance(outcome.failed["b"], TopicAlreadyExistsError)
    assert "(creating topic 'b': topic 'b' already exists)" in str(outcome.failed["b"])
    assert isinstance(outcome.look_up_again["c"], NotControllerError)


def test_without_raise_errors_a_refusal_is_the_topics_result_but_routing_still_retries(
        ) -> None:
    handler = CreateTopics([NewTopic("b"), NewTopic("c")], 5000, False, raise_errors=False)
    outcome = handler.handle_response(0, ["b", "c"], answer(
        ("b", TopicAlreadyExistsError.errno, "exists"), ("c", NotControllerError.errno, None)))
    assert outcome.completed == {"b": {"name": "b", "error_code": 36, "error_message": "exists"}}
    assert list(outcome.look_up_again) == ["c"]
    assert not outcome.failed


ZERO = uuid.UUID(int=0)


def test_delete_topics_pair() -> None:
    handler = DeleteTopics(3000)
    assert handler.build_request(0, ["a", "b"]).body == {
        "topic_names": ["a", "b"], "timeout_ms": 3000,  # up to v5
        "topics": [{"name": "a", "topic_id": ZERO}, {"name": "b", "topic_id": ZERO}]}  # v6+
    outcome: ApiResult[str, dict[str, object]] = handler.handle_response(
        0, ["a", "b"], {"responses": [{"name": "a", "error_code": 0, "topic_id": ZERO},
                                      {"name": "b", "error_code": 3}]})
    assert outcome.completed == {"a": {"name": "a", "error_code": 0}}
    assert "UnknownTopicOrPartitionError" in str(outcome.failed["b"])
    assert "(deleting topic 'b')" in str(outcome.failed["b"])


def test_create_partitions_pair() -> None:
    handler = CreatePartitions({"a": NewPartitions(4), "b": NewPartitions(3, [[1], [2]])},
                               1000, False)
    assert handler.build_request(0, ["a", "b"]).body == {"topics": [
        {"name": "a", "count": 4, "assignments": None},
        {"name": "b", "count": 3, "assignments": [{"broker_ids": [1]}, {"broker_ids": [2]}]}],
        "timeout_ms": 1000, "validate_only": False}
    outcome = handler.handle_response(0, ["a"], {"throttle_time_ms": 0, "results": [
        {"name": "a", "error_code": InvalidPartitionsError.errno,
         "error_message": "a has 8 partitions"}]})
    assert "(adding partitions to topic 'a': a has 8 partitions)" in str(outcome.failed["a"])
