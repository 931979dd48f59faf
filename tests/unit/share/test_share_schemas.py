"""The share-group API schemas as librdkafka 2.16 writes and reads them, the nullable
struct they need, and topic ids."""

from __future__ import annotations

import struct
import uuid

import pytest

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.api import SUPPORTED_VERSIONS, ApiKey
from kafkalite.protocol.messages import decode_response
from kafkalite.protocol.schemas import share
from kafkalite.protocol.schemas.metadata import METADATA_REQUEST, METADATA_RESPONSE

TOPIC = uuid.UUID("0123456789abcdef0123456789abcdef")


def _compact_string(text: str) -> bytes:
    return bytes([len(text) + 1]) + text.encode()


def test_the_versions_librdkafka_asks_for_are_served() -> None:
    assert SUPPORTED_VERSIONS[ApiKey.SHARE_GROUP_HEARTBEAT] == (1, 1)
    assert SUPPORTED_VERSIONS[ApiKey.SHARE_FETCH] == (1, 1)
    assert SUPPORTED_VERSIONS[ApiKey.SHARE_ACKNOWLEDGE] == (1, 1)
    assert SUPPORTED_VERSIONS[ApiKey.METADATA][1] >= 10  # topic ids


def test_heartbeat_assignment_is_a_nullable_struct() -> None:
    body = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m",
            "member_epoch": 3, "heartbeat_interval_ms": 5000, "assignment": None}
    wire = share.SHARE_GROUP_HEARTBEAT_RESPONSE.encode(body, 1)
    # ... member epoch, heartbeat interval, then -1 for "no assignment", then no tags
    assert wire.endswith(struct.pack(">ii", 3, 5000) + b"\xff\x00")
    assert share.SHARE_GROUP_HEARTBEAT_RESPONSE.decode(wire, 0, 1)[0] == body
    body["assignment"] = {"topic_partitions": [{"topic_id": TOPIC, "partitions": [0, 2]}]}
    wire = share.SHARE_GROUP_HEARTBEAT_RESPONSE.encode(body, 1)
    assert wire.endswith(struct.pack(">ii", 3, 5000) + b"\x01\x02" + TOPIC.bytes
                         + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00\x00\x00")
    assert share.SHARE_GROUP_HEARTBEAT_RESPONSE.decode(wire, 0, 1)[0] == body
    broken = wire.replace(struct.pack(">ii", 3, 5000) + b"\x01",
                          struct.pack(">ii", 3, 5000) + b"\x07")
    with pytest.raises(ProtocolDecodeError, match="struct marker 7"):
        share.SHARE_GROUP_HEARTBEAT_RESPONSE.decode(broken, 0, 1)


def test_share_fetch_request_as_librdkafka_writes_it() -> None:
    wire = (_compact_string("g") + _compact_string("member") + struct.pack(">iiiiii", 1, 500,
                                                                           1, 52428800, 500, 500)
            + b"\x02" + TOPIC.bytes + b"\x02" + struct.pack(">i", 0)
            + b"\x02" + struct.pack(">qq", 5, 9) + b"\x02\x01" + b"\x00"  # one batch, ACCEPT
            + b"\x00" + b"\x00"  # partition tags, topic tags
            + b"\x01" + b"\x00")  # no forgotten topics, request tags
    body, end = share.SHARE_FETCH_REQUEST.decode(wire, 0, 1)
    assert end == len(wire)
    assert (body["group_id"], body["member_id"], body["share_session_epoch"],
            body["max_records"]) == ("g", "member", 1, 500)
    partition = body["topics"][0]["partitions"][0]
    assert partition["acknowledgement_batches"] == [
        {"first_offset": 5, "last_offset": 9, "acknowledge_types": [1]}]


def test_metadata_v12_names_topics_by_id() -> None:
    request = {"topics": [{"topic_id": TOPIC, "name": None}], "allow_auto_topic_creation": False,
               "include_cluster_authorized_operations": False,
               "include_topic_authorized_operations": False}
    assert METADATA_REQUEST.decode(METADATA_REQUEST.encode(request, 12), 0, 12)[0] == request
    response = METADATA_RESPONSE.default()
    response["topics"] = [{"error_code": 100, "name": None, "topic_id": TOPIC,
                           "is_internal": False, "partitions": [],
                           "topic_authorized_operations": -(2**31)}]
    decoded = METADATA_RESPONSE.decode(METADATA_RESPONSE.encode(response, 12), 0, 12)[0]
    assert decoded["topics"][0]["name"] is None and decoded["topics"][0]["topic_id"] == TOPIC


def test_a_response_with_a_second_tag_section_decodes() -> None:
    """librdkafka's mock broker ends Metadata v9+ with two empty tag sections; clients that
    ask for topic ids (v10+) read it as Kafka's own clients do."""
    body = METADATA_RESPONSE.default()
    frame = struct.pack(">i", 7) + b"\x00" + METADATA_RESPONSE.encode(body, 12) + b"\x00"
    assert decode_response(ApiKey.METADATA, 12, frame) == (7, body)
