"""The sans-IO request/response exchange: correlation ids, split frames, mismatches."""

from __future__ import annotations

import pytest

from kafkalite.protocol import ApiKey, RequestHeader, decode_request_header, encode_response
from kafkalite.protocol.exchange import ExchangeError, RequestExchange

BODY = {"throttle_time_ms": 0, "topics": [
    {"topic": "t", "partitions": [{"error_code": 0, "partition": 0, "leader_epoch": 3,
                                   "end_offset": 42}]}]}


def _answer(frame: bytes, correlation_id: int | None = None) -> bytes:
    header, _ = decode_request_header(memoryview(frame)[4:])
    if correlation_id is not None:
        header = RequestHeader(header.api_key, header.api_version, correlation_id,
                               header.client_id)
    return b"".join(encode_response(header, BODY))  # type: ignore[arg-type]


def _request(exchange: RequestExchange) -> bytes:
    return exchange.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, {
        "replica_id": 1, "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "current_leader_epoch": 3, "leader_epoch": 2}]}]})


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
