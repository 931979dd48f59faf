"""Requests from this broker to another one that share groups make often: a partition
leader reading and writing share state at the share coordinator (Read/Write
ShareGroupState), the group coordinator initializing it and asking a leader for its
offsets (ListOffsets). Every acknowledgement is a write, so connections stay open, one
per broker, over the inter-broker listener's security; one request at a time on each.
A failed request closes its connection (the next one opens a new connection)."""

from __future__ import annotations

import asyncio
from typing import Any

from kafkalite.protocol import ApiKey
from kafkalite.protocol.exchange import RequestExchange
from kafkalite_server.cluster.broker_channel import MAX_RESPONSE_BYTES
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.security.inter_broker import PeerSecurity, roundtrip

REQUEST_TIMEOUT_S = 30.0
"""How long another broker may take to answer (Kafka's request.timeout.ms)."""

_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter, RequestExchange]


class PeerRequests:
    def __init__(self, security: PeerSecurity, client_id: str) -> None:
        self._security = security
        self._client_id = client_id
        self._connections: dict[tuple[int, str, int], _Connection] = {}
        self._locks: dict[tuple[int, str, int], asyncio.Lock] = {}

    async def call(self, peer: BrokerEndpoint, api_key: ApiKey, version: int,
                   body: dict[str, Any], timeout_s: float = REQUEST_TIMEOUT_S
                   ) -> dict[str, Any]:
        """The peer's response body. Raises OSError, TimeoutError or a KafkaError."""
        where = (peer.node_id, *self._security.address(peer))
        lock = self._locks.setdefault(where, asyncio.Lock())
        async with lock:
            try:
                async with asyncio.timeout(timeout_s):
                    reader, writer, exchange = await self._connection(where, peer)
                    return await roundtrip(reader, writer, exchange, api_key, version, body)
            except BaseException:
                self._drop(where)
                raise

    async def _connection(self, where: tuple[int, str, int],
                          peer: BrokerEndpoint) -> _Connection:
        found = self._connections.get(where)
        if found is not None and not found[1].is_closing():
            return found
        exchange = RequestExchange(self._client_id, MAX_RESPONSE_BYTES)
        reader, writer = await self._security.connect(peer, exchange)
        self._connections[where] = (reader, writer, exchange)
        return reader, writer, exchange

    def _drop(self, where: tuple[int, str, int]) -> None:
        found = self._connections.pop(where, None)
        if found is not None:
            found[1].close()

    def close(self) -> None:
        for where in list(self._connections):
            self._drop(where)
