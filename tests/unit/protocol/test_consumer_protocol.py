"""ConsumerProtocolSubscription/Assignment: golden bytes, round trips, forward
compatibility, and cross-checks with kafka-python and aiokafka."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

_topic_partitions = st.lists(
    st.tuples(st.text(max_size=5), st.lists(st.integers(0, 2**31 - 1), max_size=3)), max_size=3
)


def test_subscription_v0_golden_bytes() -> None:
    # Example from the protocol notes: v0, topic "t", empty user data.
    data = ConsumerProtocolSubscription(["t"], b"").encode(0)
    assert data.hex() == "0000" "00000001" "000174" "00000000"


def test_assignment_v0_golden_bytes() -> None:
    data = ConsumerProtocolAssignment([("t", [0, 2])], None).encode(0)
    assert data.hex() == "0000" "00000001" "000174" "00000002" "00000000" "00000002" "ffffffff"


@given(
    topics=st.lists(st.text(max_size=5), max_size=3),
    user_data=st.none() | st.binary(max_size=5),
    owned=_topic_partitions,
    generation=st.integers(-(2**31), 2**31 - 1),
    rack=st.none() | st.text(max_size=3),
)
def test_subscription_v3_round_trip(
    topics: list[str], user_data: bytes | None, owned: list[tuple[str, list[int]]],
    generation: int, rack: str | None,
) -> None:
    sub = ConsumerProtocolSubscription(topics, user_data, owned, generation, rack)
    assert ConsumerProtocolSubscription.decode(sub.encode(3)) == sub


def test_older_versions_drop_newer_fields() -> None:
    sub = ConsumerProtocolSubscription(["a"], None, [("a", [1])], 4, "r")
    assert ConsumerProtocolSubscription.decode(sub.encode(0)) == ConsumerProtocolSubscription(["a"], None)
    assert ConsumerProtocolSubscription.decode(sub.encode(2)) == ConsumerProtocolSubscription(
        ["a"], None, [("a", [1])], 4
    )


def test_higher_versions_are_read_by_ignoring_trailing_fields() -> None:
    future = bytearray(ConsumerProtocolSubscription(["a"], b"u", [], 1, "r").encode(3))
    future[0:2] = b"\x00\x07"
    future += b"new fields"
    assert ConsumerProtocolSubscription.decode(bytes(future)) == ConsumerProtocolSubscription(
        ["a"], b"u", [], 1, "r"
    )


def test_zero_length_assignment_is_empty_and_garbage_is_an_error() -> None:
    assert ConsumerProtocolAssignment.decode(b"") == ConsumerProtocolAssignment([], None)
    with pytest.raises(ProtocolDecodeError):
        ConsumerProtocolAssignment.decode(b"\x00")
    with pytest.raises(ProtocolDecodeError):
        ConsumerProtocolSubscription.decode(b"\x00\x00\x00\x00\x00\x05ab")
    with pytest.raises(ProtocolDecodeError, match="negative version"):
        ConsumerProtocolSubscription.decode(b"\xff\xff")
    with pytest.raises(ValueError):
        ConsumerProtocolAssignment([], None).encode(4)


@pytest.mark.parametrize("version", range(4))
@given(owned=_topic_partitions, user_data=st.none() | st.binary(max_size=4))
def test_subscription_matches_kafka_python(
    version: int, owned: list[tuple[str, list[int]]], user_data: bytes | None
) -> None:
    metadata = pytest.importorskip("kafka.protocol.consumer.metadata")
    theirs_cls = metadata.ConsumerProtocolSubscription
    sub = ConsumerProtocolSubscription(["x", "y"], user_data, owned, 3, "rack")
    ours = sub.encode(version)
    theirs = theirs_cls(
        topics=["x", "y"],
        user_data=user_data,
        owned_partitions=[theirs_cls.TopicPartition(topic=t, partitions=p) for t, p in owned],
        generation_id=3,
        rack_id="rack",
        version=version,
    )
    assert bytes(theirs.encode()) == ours
    decoded = theirs_cls.decode(ours)
    assert decoded.topics == ["x", "y"] and decoded.user_data == user_data


@given(partitions=_topic_partitions, user_data=st.binary(max_size=4))
def test_assignment_matches_aiokafka(partitions: list[tuple[str, list[int]]], user_data: bytes) -> None:
    protocol = pytest.importorskip("aiokafka.coordinator.protocol")
    theirs = protocol.ConsumerProtocolMemberAssignment(0, partitions, user_data)
    assert theirs.encode() == ConsumerProtocolAssignment(partitions, user_data).encode(0)
    decoded = protocol.ConsumerProtocolMemberAssignment.decode(
        ConsumerProtocolAssignment(partitions, user_data).encode(0)
    )
    assert [tuple(item) for item in decoded.assignment] == partitions
    assert ConsumerProtocolAssignment.decode(theirs.encode()) == ConsumerProtocolAssignment(
        partitions, user_data
    )
