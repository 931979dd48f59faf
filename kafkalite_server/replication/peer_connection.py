"""A broker's connection to another broker for its replica fetcher: an asyncio protocol
around the sans-IO :class:`~kafkalite.protocol.exchange.RequestExchange`.

One request at a time, each awaited with a timeout; any failure closes the connection and
the next request opens a new one.

Responses are received with :class:`ResponseReader`, straight from the socket into one
buffer per response. A replica fetch response carries up to ``replica.fetch.max.bytes``
of records; read through an ``asyncio.StreamReader`` and a ``FrameDecoder`` they were
copied four times on the way (each read, the stream buffer, the frame), which a profile of
a follower showed as most of its CPU time during replication (see docs/performance.md).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from typing import Any

from kafkalite.protocol.exchange import RequestExchange
from kafkalite.protocol.framing import FrameTooLargeError
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.security.inter_broker import (
    PeerAuthenticationError,
    PeerLogin,
    PeerSecurity,
)

_SIZE_BYTES = 4


class ResponseReader(asyncio.BufferedProtocol):
    """Splits the byte stream into size-prefixed frames, letting the transport write
    each frame's bytes directly into a ``bytearray`` of the frame's size."""

    def __init__(self, max_frame_bytes: int) -> None:
        self._max_frame_bytes = max_frame_bytes
        self._size = bytearray(_SIZE_BYTES)
        self._frame: bytearray | None = None
        self._filled = 0
        self._frames: deque[bytearray] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        target = self._size if self._frame is None else self._frame
        return memoryview(target)[self._filled:]

    def buffer_updated(self, nbytes: int) -> None:
        self._filled += nbytes
        if self._frame is None:
            if self._filled < _SIZE_BYTES:
                return
            size = int.from_bytes(self._size, "big", signed=True)
            if not 0 <= size <= self._max_frame_bytes:
                self._fail(FrameTooLargeError(size, self._max_frame_bytes))
                return
            self._frame, self._filled = bytearray(size), 0
            if size:
                return
        elif self._filled < len(self._frame):
            return
        self._frames.append(self._frame)
        self._frame, self._filled = None, 0
        self._wake()

    def eof_received(self) -> bool:
        self._fail(ConnectionResetError("the broker closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionResetError("the broker closed the connection"))

    async def next_frame(self) -> bytearray:
        """The next whole frame, without its size prefix; raises what broke the stream."""
        while not self._frames:
            if self._error is not None:
                raise self._error
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self._frames.popleft()

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        if self._transport is not None:
            self._transport.close()
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class PeerConnection:
    def __init__(self, endpoint: BrokerEndpoint, client_id: str, *, timeout_s: float,
                 max_response_bytes: int, security: PeerSecurity) -> None:
        self.endpoint = endpoint
        self._security = security
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._max_response_bytes = max_response_bytes
        self._connection: tuple[asyncio.Transport, ResponseReader] | None = None
        self._exchange: RequestExchange | None = None
        self._login: PeerLogin | None = None

    async def send(self, api_key: int, api_version: int,
                   body: Mapping[str, Any]) -> dict[str, Any]:
        """The response body; raises OSError/TimeoutError/ProtocolDecodeError on failure
        (the connection is then closed)."""
        try:
            return await asyncio.wait_for(self._send(api_key, api_version, body),
                                          self._timeout_s)
        except BaseException:
            self.close()
            raise

    async def _send(self, api_key: int, api_version: int,
                    body: Mapping[str, Any]) -> dict[str, Any]:
        if self._connection is None or self._exchange is None:
            await self._open()
        elif self._login is not None:
            await self._login.renew_if_due(self._roundtrip)
        return await self._roundtrip(api_key, api_version, body)

    async def _open(self) -> None:
        """Connects over the inter-broker listener's protocol (TLS, then a SASL login)."""
        security = self._security
        if security.problem is not None:
            raise PeerAuthenticationError(security.problem)
        host, port = security.address(self.endpoint)
        self._connection = await asyncio.get_running_loop().create_connection(
            lambda: ResponseReader(self._max_response_bytes), host, port,
            ssl=security.ssl_context,
            server_hostname=host if security.ssl_context is not None else None)
        self._exchange = RequestExchange(self._client_id, self._max_response_bytes)
        if security.sasl is not None:
            self._login = PeerLogin(security.sasl)
            await self._login.login(self._roundtrip)

    async def _roundtrip(self, api_key: int, api_version: int,
                         body: Mapping[str, Any]) -> dict[str, Any]:
        assert self._connection is not None and self._exchange is not None
        transport, reader = self._connection
        transport.write(self._exchange.request(api_key, api_version, body))
        return self._exchange.receive_frame(await reader.next_frame()).body

    def close(self) -> None:
        if self._connection is not None:
            self._connection[0].close()
        self._connection = None
        self._exchange = None
        self._login = None
