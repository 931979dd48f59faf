"""The client side of one connection, without I/O: correlation ids and response matching.

:meth:`RequestExchange.request` frames a request and remembers it; :meth:`receive` takes
whatever bytes arrived and returns the responses they complete, matched to their requests
in order (Kafka answers a connection's requests in the order they were sent). A response
with an unexpected correlation id means the stream is broken: :class:`ExchangeError`.
A driver (asyncio streams, a selector loop) only moves bytes.

Both ends of kafkalite speak through it: the SDK's
:class:`~kafkalite.client.connection.BrokerConnection` and the broker's peer connections
(replica fetchers, the controller's channels). A driver may attach a ``context`` to each
request (its future, say) and a ``deadline`` on its own clock: the exchange hands the
context back with the response, tells the earliest deadline in flight, and on
:meth:`abandon` returns the contexts of every request left unanswered, so a driver never
keeps a second table of what is in flight.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Mapping
from typing import Any, NamedTuple

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.api import ApiKey
from kafkalite.protocol.errors import UnsupportedVersionError
from kafkalite.protocol.framing import FrameDecoder
from kafkalite.protocol.messages import decode_response, encode_request
from kafkalite.protocol.primitives import INT32_MAX

MAX_CORRELATION_ID = INT32_MAX
"""Correlation ids count up from 0 and wrap to 0 after this, the largest int32."""

_CORRELATION_ID = struct.Struct(">i")
_UNSUPPORTED_VERSION_CODE = struct.pack(">h", UnsupportedVersionError.errno)


class ExchangeError(ProtocolDecodeError):
    """A response that does not answer the oldest request in flight."""


class Response(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    body: dict[str, Any]
    context: Any = None
    """What the driver attached to the request (:meth:`RequestExchange.request`)."""


class _Pending(NamedTuple):
    correlation_id: int
    api_key: int
    api_version: int
    context: Any
    deadline: float | None


class RequestExchange:
    def __init__(self, client_id: str | None, max_frame_bytes: int) -> None:
        self.client_id = client_id
        self._decoder = FrameDecoder(max_frame_bytes)
        self._in_flight: deque[_Pending] = deque()
        self._next_id = 0

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def request(self, api_key: int, api_version: int, body: Mapping[str, Any], *,
                context: Any = None, deadline: float | None = None,
                expect_response: bool = True) -> bytes:
        """The request's frame (size prefix included), now awaiting its response.

        ``context`` comes back with the response (or from :meth:`abandon`); ``deadline``
        counts in :meth:`next_deadline`. Without ``expect_response`` (Produce with acks=0)
        the broker sends nothing back, so nothing waits for it. An encoding error raises
        before anything is registered: a bad body costs only its own request.
        """
        correlation_id = self._next_id
        frame = encode_request(api_key, api_version, correlation_id, self.client_id, body)
        self._next_id = (correlation_id + 1) & MAX_CORRELATION_ID
        if expect_response:
            self._in_flight.append(
                _Pending(correlation_id, api_key, api_version, context, deadline))
        return frame

    def next_deadline(self) -> float | None:
        """The earliest deadline of a request in flight (None: none has one)."""
        deadlines = [entry.deadline for entry in self._in_flight if entry.deadline is not None]
        return min(deadlines, default=None)

    def abandon(self) -> list[Any]:
        """The contexts of every request in flight, oldest first; the exchange is then
        empty, with no partial frame buffered (its connection is gone)."""
        contexts = [entry.context for entry in self._in_flight]
        self._in_flight.clear()
        self._decoder = FrameDecoder(self._decoder.max_frame_bytes)
        return contexts

    def frames(self, data: bytes | bytearray | memoryview) -> list[bytearray]:
        """The whole response frames ``data`` completes, for :meth:`receive_frame` one at a
        time: a driver whose callbacks may close the connection between two responses
        stops there, and the rest stay in flight for :meth:`abandon`."""
        return self._decoder.feed(data)

    def receive(self, data: bytes | bytearray | memoryview) -> list[Response]:
        """The responses completed by ``data``, oldest first."""
        return [self.receive_frame(frame) for frame in self._decoder.feed(data)]

    def receive_frame(self, frame: bytes | bytearray | memoryview) -> Response:
        """One whole response frame (without its size prefix), for a driver that splits
        the stream itself (straight into one buffer per frame, saving the copies).

        The request stays in flight when its answer cannot be read, so that the driver's
        :meth:`abandon` fails it with the rest.
        """
        if not self._in_flight:
            raise ExchangeError("a response arrived with no request in flight")
        expected = self._in_flight[0]
        correlation_id, body = _decode(expected, frame)
        if correlation_id != expected.correlation_id:
            raise ExchangeError(
                f"correlation id {correlation_id}, expected {expected.correlation_id}")
        self._in_flight.popleft()
        return Response(expected.api_key, expected.api_version, correlation_id, body,
                        expected.context)


def _decode(expected: _Pending, frame: bytes | bytearray | memoryview
            ) -> tuple[int, dict[str, Any]]:
    """The response to ``expected``. A broker that does not know our ApiVersions version
    answers in v0 format (read as such by ``decode_response``); some (librdkafka's mock
    cluster) answer in a format of their own: then only the error code counts, and
    UNSUPPORTED_VERSION tells the driver to ask again with an older version."""
    try:
        return decode_response(expected.api_key, expected.api_version, frame)
    except ProtocolDecodeError:
        if (expected.api_key != ApiKey.API_VERSIONS or expected.api_version == 0
                or bytes(frame[4:6]) != _UNSUPPORTED_VERSION_CODE):
            raise
    return _CORRELATION_ID.unpack_from(frame)[0], {
        "error_code": UnsupportedVersionError.errno, "api_keys": []}
