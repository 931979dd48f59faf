"""A broker's connection to another broker for its replica fetcher: asyncio streams
around the sans-IO :class:`~kafkalite.protocol.exchange.RequestExchange`.

One request at a time, each awaited with a timeout; any failure closes the connection and
the next request opens a new one, over the inter-broker listener's security protocol
(:class:`~kafkalite_server.security.inter_broker.PeerSecurity`: TLS, SASL login).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kafkalite.protocol.exchange import RequestExchange
from kafkalite_server.cluster.image import BrokerEndpoint
from kafkalite_server.security.inter_broker import PeerSecurity

_READ_BYTES = 256 * 1024


class PeerConnection:
    def __init__(self, endpoint: BrokerEndpoint, client_id: str, *, timeout_s: float,
                 max_response_bytes: int, security: PeerSecurity) -> None:
        self.endpoint = endpoint
        self._security = security
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._max_response_bytes = max_response_bytes
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._exchange: RequestExchange | None = None

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
        if self._streams is None or self._exchange is None:
            exchange = RequestExchange(self._client_id, self._max_response_bytes)
            self._streams = await self._security.connect(self.endpoint, exchange)
            self._exchange = exchange
        reader, writer = self._streams
        writer.write(self._exchange.request(api_key, api_version, body))
        await writer.drain()
        while True:
            data = await reader.read(_READ_BYTES)
            if not data:
                raise ConnectionResetError(f"broker {self.endpoint.node_id} closed the "
                                           "connection")
            responses = self._exchange.receive(data)
            if responses:
                return responses[0].body

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
        self._streams = None
        self._exchange = None
