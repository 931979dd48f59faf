"""The sans-IO request/response exchange: correlation ids, split frames, mismatches."""

from __future__ import annotations

import struct

import pytest

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol import ApiKey, RequestHeader, decode_request_header, encode_response
from kafkalite.protocol.exchange import MAX_CORRELATION_ID, ExchangeError, RequestExchange

BODY = {"throttle_time_ms": 0, "topics": [
    {"topic": "t", "partitions": [{"error_code": 0, "partition": 0, "leader_epoch": 3,
                                   "end_offset": 42}]}]}


def _answer(frame: bytes, correlation_id: int | None = None) -> bytes:
    header, _ = decode_request_header(memoryview(frame)[4:])
    if correlation_id is not None:
        header = RequestHeader(header.api_key, header.api_version, correlation_id,
                               header.client_id)
    return b"".join(encode_response(header, BODY))  # type: ignore[arg-type]


_BODY = {"replica_id": 1, "topics": [{"topic": "t", "partitions": [
    {"partition": 0, "current_leader_epoch": 3, "leader_epoch": 2}]}]}


def _request(exchange: RequestExchange) -> bytes:
    return exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY)


def test_responses_match_requests_in_order_across_split_reads() -> None:
    exchange = RequestExchange("replica-fetcher-1", 1 << 20)
    first, second = _request(exchange), _request(exchange)
    assert exchange.in_flight == 2
    data = _answer(first) + _answer(second)
    got = exchange.receive(data[:7]) + exchange.receive(data[7:])
    assert [r.correlation_id for r in got] == [0, 1]
    assert got[0].body["topics"][0]["partitions"][0]["end_offset"] == 42
    assert exchange.in_flight == 0


def test_a_wrong_correlation_id_breaks_the_exchange() -> None:
    exchange = RequestExchange(None, 1 << 20)
    frame = _request(exchange)
    with pytest.raises(ExchangeError):
        exchange.receive(_answer(frame, correlation_id=7))


def test_a_response_without_a_request_breaks_the_exchange() -> None:
    exchange = RequestExchange(None, 1 << 20)
    frame = _request(exchange)
    exchange.receive(_answer(frame))
    with pytest.raises(ExchangeError):
        exchange.receive(_answer(frame))


def test_contexts_come_back_with_their_responses() -> None:
    exchange = RequestExchange(None, 1 << 20)
    first = exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY, context="first")
    second = exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY, context="second")
    got = exchange.receive(_answer(first) + _answer(second))
    assert [r.context for r in got] == ["first", "second"]


def test_the_earliest_deadline_in_flight_and_abandoning_what_is_left() -> None:
    exchange = RequestExchange(None, 1 << 20)
    assert exchange.next_deadline() is None
    first = exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY, context=1, deadline=9.0)
    exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY, context=2, deadline=5.0)
    exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY, context=3)
    assert exchange.next_deadline() == 5.0
    half = _answer(first)[:5]
    assert exchange.receive(half) == []
    assert exchange.abandon() == [1, 2, 3]
    assert (exchange.in_flight, exchange.next_deadline()) == (0, None)
    # The half-received frame went with the connection: the next bytes start a frame.
    fresh = exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY, context=4)
    assert [r.context for r in exchange.receive(_answer(fresh))] == [4]


def test_a_request_without_response_is_not_waited_for() -> None:
    exchange = RequestExchange(None, 1 << 20)
    frame = exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY, expect_response=False)
    assert frame and exchange.in_flight == 0
    answered = exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY)
    assert exchange.receive(_answer(answered))[0].correlation_id == 1


def test_correlation_ids_wrap_to_zero_after_the_largest_int32() -> None:
    exchange = RequestExchange(None, 1 << 20)
    exchange._next_id = MAX_CORRELATION_ID
    last, wrapped = _request(exchange), _request(exchange)
    got = exchange.receive(_answer(last) + _answer(wrapped))
    assert [r.correlation_id for r in got] == [MAX_CORRELATION_ID, 0]


def test_an_encoding_error_registers_nothing() -> None:
    exchange = RequestExchange(None, 1 << 20)
    with pytest.raises(Exception):  # noqa: B017 - the schema's own error for a bad body
        exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, {"topics": "not a list"})
    assert exchange.in_flight == 0
    assert exchange.receive(_answer(_request(exchange)))[0].correlation_id == 0


def test_an_undecodable_answer_leaves_its_request_for_abandon() -> None:
    exchange = RequestExchange(None, 1 << 20)
    exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, _BODY, context="mine")
    garbage = struct.pack(">i", 0) + b"\xff" * 3  # correlation id 0, then no valid body
    with pytest.raises(ProtocolDecodeError):
        exchange.receive(struct.pack(">i", len(garbage)) + garbage)
    assert exchange.abandon() == ["mine"]


def test_an_api_versions_answer_in_a_brokers_own_format_asks_for_an_older_version() -> None:
    """librdkafka's mock cluster answers a too-new ApiVersions in a format of its own: only
    its error code (UNSUPPORTED_VERSION) is read."""
    exchange = RequestExchange(None, 1 << 20)
    exchange.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "kafkalite",
                                              "client_software_version": "1"})
    body = struct.pack(">ih", 0, 35) + b"\x07garbage"
    (response,) = exchange.receive(struct.pack(">i", len(body)) + body)
    assert response.body == {"error_code": 35, "api_keys": []}
