"""The client side of one connection, without I/O: correlation ids and response matching.

:meth:`RequestExchange.request` frames a request and remembers it; :meth:`receive` takes
whatever bytes arrived and returns the responses they complete, matched to their requests
in order (Kafka answers a connection's requests in the order they were sent). A response
with an unexpected correlation id means the stream is broken: :class:`ExchangeError`.
A driver (asyncio streams, a selector loop) only moves bytes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, NamedTuple

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.framing import FrameDecoder
from kafkalite.protocol.messages import decode_response, encode_request

_MAX_CORRELATION_ID = 2**31 - 1


class ExchangeError(ProtocolDecodeError):
    """A response that does not answer the oldest request in flight."""


class Response(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    body: dict[str, Any]


class RequestExchange:
    def __init__(self, client_id: str | None, max_frame_bytes: int) -> None:
        self.client_id = client_id
        self._decoder = FrameDecoder(max_frame_bytes)
        self._in_flight: deque[tuple[int, int, int]] = deque()
        self._next_id = 0

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def request(self, api_key: int, api_version: int, body: Mapping[str, Any]) -> bytes:
        """The request's frame (size prefix included), now awaiting its response."""
        correlation_id = self._next_id
        self._next_id = (self._next_id + 1) % _MAX_CORRELATION_ID
        frame = encode_request(api_key, api_version, correlation_id, self.client_id, body)
        self._in_flight.append((correlation_id, api_key, api_version))
        return frame

    def receive(self, data: bytes | bytearray | memoryview) -> list[Response]:
        """The responses completed by ``data``, oldest first."""
        return [self.receive_frame(frame) for frame in self._decoder.feed(data)]

    def receive_frame(self, frame: bytes | bytearray | memoryview) -> Response:
        """One whole response frame (without its size prefix), for a driver that splits
        the stream itself (straight into one buffer per frame, saving the copies)."""
        if not self._in_flight:
            raise ExchangeError("a response arrived with no request in flight")
        expected, api_key, api_version = self._in_flight.popleft()
        correlation_id, body = decode_response(api_key, api_version, frame)
        if correlation_id != expected:
            raise ExchangeError(f"correlation id {correlation_id}, expected {expected}")
        return Response(api_key, api_version, correlation_id, body)
