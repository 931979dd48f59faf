"""Every API and every supported version: request and response round trips, headers,
framing of whole messages, and the typed errors for bad input."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.errors import ProtocolDecodeError
from kafkalite.errors import UnsupportedVersionError as PublicUnsupportedVersionError
from kafkalite.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ProtocolEncodeError,
    RequestHeader,
    api_versions_unsupported_response,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    frame_bytes,
)
from kafkalite.protocol.api import APIS
from kafkalite.protocol.errors import UnsupportedVersionError

from .schema_strategies import body_strategy, expected_decoded, normalized

ALL_VERSIONS = [
    (key, version)
    for key, (lo, hi) in SUPPORTED_VERSIONS.items()
    for version in range(lo, hi + 1)
]
VERSION_IDS = [f"{key.name}-v{version}" for key, version in ALL_VERSIONS]
ROUND_TRIP = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize(("key", "version"), ALL_VERSIONS, ids=VERSION_IDS)
@ROUND_TRIP
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_request_round_trip(key: ApiKey, version: int, data: st.DataObject, correlation_id: int) -> None:
    message = APIS[key].request
    body = data.draw(body_strategy(message, version))
    client_id = data.draw(st.none() | st.text(max_size=5))
    frame = encode_request(key, version, correlation_id, client_id, body)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, offset = decode_request_header(frame[4:])
    assert header == RequestHeader(key, version, correlation_id, client_id)
    decoded = decode_request_body(header, frame[4:], offset)
    assert normalized(decoded) == expected_decoded(message.fields, version, body)


@pytest.mark.parametrize(("key", "version"), ALL_VERSIONS, ids=VERSION_IDS)
@ROUND_TRIP
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_response_round_trip(key: ApiKey, version: int, data: st.DataObject, correlation_id: int) -> None:
    message = APIS[key].response
    body = data.draw(body_strategy(message, version))
    header = RequestHeader(key, version, correlation_id, "client")
    frame = frame_bytes(encode_response(header, body))
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    got_correlation_id, decoded = decode_response(key, version, frame[4:])
    assert got_correlation_id == correlation_id
    assert normalized(decoded) == expected_decoded(message.fields, version, body)


def test_decoded_body_holds_every_field_with_defaults_for_absent_ones() -> None:
    frame = encode_request(ApiKey.FETCH, 4, 1, None, {"max_wait_ms": 500, "topics": []})
    header, offset = decode_request_header(frame[4:])
    body = decode_request_body(header, frame[4:], offset)
    assert body["session_epoch"] == -1  # v7+ field, default from the schema
    assert body["forgotten_topics_data"] == []
    assert body["rack_id"] == ""
    assert body["replica_id"] == -1
    assert body["max_wait_ms"] == 500


def test_records_decode_zero_copy_and_opaque_records_become_their_own_chunk() -> None:
    class FileRegion:
        def __len__(self) -> int:
            return 5

    region = FileRegion()
    header = RequestHeader(ApiKey.FETCH, 11, 42, "c")
    partition = {"partition_index": 0, "high_watermark": 9, "records": region}
    chunks = encode_response(header, {"responses": [{"topic": "t", "partitions": [partition]}]})
    assert len(chunks) == 2 and chunks[1] is region
    size = int.from_bytes(chunks[0][:4], "big")  # type: ignore[index]
    assert size == len(chunks[0]) - 4 + 5  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        frame_bytes(chunks)

    payload = bytearray(frame_bytes(
        encode_response(header, {"responses": [{"topic": "t", "partitions": [
            {**partition, "records": b"HELLO"}]}]})
    ))
    _, body = decode_response(ApiKey.FETCH, 11, payload[4:])
    records = body["responses"][0]["partitions"][0]["records"]
    assert isinstance(records, memoryview) and records.tobytes() == b"HELLO"


# Header version rules (KIP-482 / KIP-511): golden bytes.
def test_api_versions_v3_uses_request_header_v2_and_response_header_v0() -> None:
    body = {"client_software_name": "k", "client_software_version": "1"}
    frame = encode_request(ApiKey.API_VERSIONS, 3, 7, "id", body)
    assert frame.hex() == (
        "00000012" "0012" "0003" "00000007" "0002" "6964" "00"  # header v2: tags
        "026b" "0231" "00"  # compact strings + body tags
    )
    header, offset = decode_request_header(frame[4:])
    assert offset == 13
    response = frame_bytes(encode_response(header, {"api_keys": []}))
    assert response.hex() == "0000000c" "00000007" "0000" "01" "00000000" "00"


def test_metadata_v8_uses_request_header_v1_and_response_header_v0() -> None:
    frame = encode_request(ApiKey.METADATA, 8, 3, "ab", {"topics": None})
    assert frame.hex() == "00000013" "0003" "0008" "00000003" "0002" "6162" "ffffffff" "01" "00" "00"
    header, _ = decode_request_header(frame[4:])
    response = frame_bytes(encode_response(header, {}))
    assert response[4:8] == b"\x00\x00\x00\x03" and response[8:12] == b"\x00\x00\x00\x00"


def test_api_versions_unsupported_response_bytes() -> None:
    frame = api_versions_unsupported_response(0x01020304)
    assert frame.hex() == "00000010" "01020304" "0023" "00000001" "0012" "0000" "0004"


def test_header_of_unknown_keys_and_unsupported_versions_still_parses() -> None:
    unknown = b"\x03\xe7\x00\x09\x00\x00\x00\x05\xff\xff" + b"junk"
    header, offset = decode_request_header(unknown)
    assert header == RequestHeader(999, 9, 5, None) and offset == 10
    with pytest.raises(UnsupportedVersionError):
        decode_request_body(header, unknown, offset)
    # ApiVersions v9 (above our max) still gets a v2 header read: client id, then tags.
    future = b"\x00\x12\x00\x09\x00\x00\x00\x06\x00\x01x\x00" + b"\x01\x02"
    header, offset = decode_request_header(future)
    assert header == RequestHeader(18, 9, 6, "x") and offset == 12
    with pytest.raises(PublicUnsupportedVersionError):
        decode_request_body(header, future, offset)
    metadata_v13 = b"\x00\x03\x00\x0d\x00\x00\x00\x07\x00\x00"
    assert decode_request_header(metadata_v13)[1] == 10


@pytest.mark.parametrize("frame", [b"", b"\x00\x03\x00", b"\x00\x03\x00\x08\x00\x00\x00\x01\x00\x05ab"])
def test_truncated_header_is_a_decode_error(frame: bytes) -> None:
    with pytest.raises(ProtocolDecodeError):
        decode_request_header(frame)


def _metadata_request_frame() -> bytes:
    return encode_request(ApiKey.METADATA, 4, 1, "c", {"topics": [{"name": "topic"}]})[4:]


def test_bytes_after_a_complete_request_body_are_ignored_as_kafka_does() -> None:
    frame = _metadata_request_frame() + b"\x00"
    header, offset = decode_request_header(frame)
    assert decode_request_body(header, frame, offset)["topics"][0]["name"] == "topic"


def test_malformed_body_names_the_field() -> None:
    frame = bytearray(_metadata_request_frame())
    header, offset = decode_request_header(frame)
    frame[offset + 4 : offset + 6] = b"\x7f\xff"  # topic name length far beyond the frame
    with pytest.raises(ProtocolDecodeError, match=r"topics\[0\]\.name"):
        decode_request_body(header, frame, offset)


@given(cut=st.integers(0, 40))
def test_every_truncation_of_a_body_is_a_decode_error(cut: int) -> None:
    frame = _metadata_request_frame()
    header, offset = decode_request_header(frame)
    truncated = frame[: max(offset, len(frame) - 1 - cut)]
    with pytest.raises(ProtocolDecodeError):
        decode_request_body(header, truncated, offset)


@given(garbage=st.binary(max_size=64))
def test_random_bodies_never_escape_as_untyped_errors(garbage: bytes) -> None:
    for key, (_, hi) in SUPPORTED_VERSIONS.items():
        header = RequestHeader(key, hi, 1, None)
        with contextlib.suppress(ProtocolDecodeError):
            decode_request_body(header, garbage, 0)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"topics": [{"name": 5}]}, r"topics\[0\]\.name: str expected"),
        ({"topics": [{"name": None}]}, r"topics\[0\]\.name: None"),
        ({"topics": "abc"}, r"topics: list expected"),
        ({"allow_auto_topic_creation": 1}, r"allow_auto_topic_creation: bool expected"),
    ],
)
def test_encode_errors_name_the_field(body: dict[str, Any], path: str) -> None:
    with pytest.raises(ProtocolEncodeError, match=path) as info:
        encode_request(ApiKey.METADATA, 4, 1, "c", body)
    assert isinstance(info.value, ValueError)


def test_int_out_of_range_and_wrong_types_are_encode_errors() -> None:
    with pytest.raises(ProtocolEncodeError, match=r"acks"):
        encode_request(ApiKey.PRODUCE, 3, 1, None, {"acks": 70000})
    with pytest.raises(ProtocolEncodeError, match=r"partition_data\[0\]\.records"):
        encode_request(ApiKey.PRODUCE, 3, 1, None, {"topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": "text"}]}]})


def test_fields_not_in_the_version_are_ignored_when_encoding() -> None:
    with_extra = encode_request(ApiKey.METADATA, 0, 1, "c", {"topics": [], "allow_auto_topic_creation": False})
    assert with_extra == encode_request(ApiKey.METADATA, 0, 1, "c", {"topics": []})


def test_unsupported_versions_are_refused_on_both_sides() -> None:
    with pytest.raises(UnsupportedVersionError):
        encode_request(ApiKey.OFFSET_COMMIT, 0, 1, None, {})
    with pytest.raises(UnsupportedVersionError):
        decode_response(ApiKey.FETCH, 18, b"\x00\x00\x00\x01")


@pytest.mark.parametrize("requested", range(5))
def test_clients_read_the_unsupported_api_versions_reply_at_any_requested_version(requested: int) -> None:
    frame = api_versions_unsupported_response(77)
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, requested, frame[4:])
    assert correlation_id == 77
    assert body["error_code"] == 35
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]


def test_a_broken_api_versions_reply_is_still_a_decode_error() -> None:
    with pytest.raises(ProtocolDecodeError):
        decode_response(ApiKey.API_VERSIONS, 3, b"\x00\x00\x00\x01\x00")
