"""Conversions between assignor types and the group protocol bytes, checked against
kafka-python's independent encoders, and the commit offset shapes users may pass."""

from __future__ import annotations

import pytest
from kafka.protocol.old.consumer_protocol import (
    ConsumerProtocolMemberAssignment_v0 as KafkaPythonAssignment,
)
from kafka.protocol.old.consumer_protocol import (
    ConsumerProtocolMemberMetadata_v0 as KafkaPythonSubscription,
)

from kafkalite.consumer.assignors import Assignment
from kafkalite.consumer.consumer import normalize_offsets
from kafkalite.consumer.group_wire import (
    assignment_from_wire,
    assignment_to_wire,
    subscription_from_wire,
)
from kafkalite.protocol.consumer_protocol import ConsumerProtocolSubscription
from kafkalite.structs import OffsetAndMetadata, TopicPartition


def test_kafka_python_subscription_reads_as_an_assignor_subscription() -> None:
    data = KafkaPythonSubscription(0, ["b", "a"], b"ud").encode()
    subscription, version = subscription_from_wire(
        {"member_id": "m", "group_instance_id": "i-1", "metadata": data})
    assert version == 0
    assert subscription.topics == ["b", "a"]
    assert subscription.user_data == b"ud"
    assert subscription.group_instance_id == "i-1"
    assert subscription.owned_partitions == []


def test_owned_partitions_and_generation_come_through() -> None:
    data = ConsumerProtocolSubscription(["t"], None, [("t", [2, 0])], 7).encode(3)
    subscription, version = subscription_from_wire({"member_id": "m", "metadata": data})
    assert version == 3
    assert subscription.owned_partitions == [TopicPartition("t", 2), TopicPartition("t", 0)]
    assert subscription.generation_id == 7


@pytest.mark.parametrize("version", [0, 1, 3, 9])
def test_assignment_bytes_read_by_kafka_python(version: int) -> None:
    assignment = Assignment([TopicPartition("b", 1), TopicPartition("a", 2),
                             TopicPartition("a", 0)], b"x")
    data = assignment_to_wire(assignment, version)
    decoded = KafkaPythonAssignment.decode(data)
    assert decoded.version == min(version, 3)
    assert sorted(decoded.partitions()) == [("a", 0), ("a", 2), ("b", 1)]
    assert decoded.user_data == b"x"
    assert sorted(assignment_from_wire(data).partitions) == sorted(assignment.partitions)


def test_empty_assignment_bytes_mean_no_partitions() -> None:
    assert assignment_from_wire(b"").partitions == []


def test_assignor_returning_garbage_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="TopicPartition"):
        assignment_to_wire(Assignment([("t", 0)]), 0)  # type: ignore[list-item]


def test_commit_offsets_accept_ints_and_offset_and_metadata() -> None:
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert normalize_offsets({tp0: 5, tp1: OffsetAndMetadata(9, "note")}) == {
        tp0: OffsetAndMetadata(5), tp1: OffsetAndMetadata(9, "note")}


def test_commit_offsets_accept_kafka_pythons_none_metadata() -> None:
    tp = TopicPartition("t", 0)
    assert normalize_offsets({tp: OffsetAndMetadata(3, None, -1)}) == {  # type: ignore[arg-type]
        tp: OffsetAndMetadata(3, "", -1)}


@pytest.mark.parametrize(("offsets", "error"), [
    ({TopicPartition("t", 0): -1}, ValueError),
    ({TopicPartition("t", 0): "5"}, TypeError),
    ({TopicPartition("t", 0): True}, TypeError),
    ({("t", 0): 5}, TypeError),
    ({TopicPartition("t", 0): OffsetAndMetadata(1, 5)}, TypeError),  # type: ignore[arg-type]
    ([(TopicPartition("t", 0), 5)], TypeError),
])
def test_bad_commit_offsets_are_refused(offsets: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        normalize_offsets(offsets)  # type: ignore[arg-type]
