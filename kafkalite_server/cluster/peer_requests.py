"""A sender's requests from this broker to the others, over one kept-open connection per
destination (Kafka's inter-broker send threads each own a NetworkClient the same way).

Share groups ask often (every acknowledgement writes share state at the share
coordinator); the transaction coordinator sends WriteTxnMarkers, verification
(AddPartitionsToTxn v4) and the hanging-transaction check. Each sender has its own
instance, so one kind of request never waits behind another's; on an instance, one
request at a time per destination, over the inter-broker listener's security. A failed
request closes its connection (the next one opens a new connection)."""

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
