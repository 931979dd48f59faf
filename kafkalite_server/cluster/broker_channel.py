"""The controller's connection to one broker: controller messages as Kafka requests.

Messages queue and go out one at a time, in order, each awaiting its response (the
broker's per-partition errors are logged). A lost connection is re-opened with a backoff
and the unanswered message sent again, until the channel is closed: the controller closes
a broker's channel when the broker leaves the cluster. Connections use the inter-broker
listener's security protocol (:mod:`kafkalite_server.security.inter_broker`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.errors import error_for_code
from kafkalite.protocol.exchange import RequestExchange
from kafkalite_server.cluster.image import BrokerEndpoint
from kafkalite_server.cluster.messages import ControllerMessage
from kafkalite_server.cluster.wire import to_request
from kafkalite_server.security.inter_broker import PeerSecurity, roundtrip

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
MAX_RESPONSE_BYTES = 100 * 1024 * 1024
_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter, RequestExchange]


async def call(endpoint: BrokerEndpoint, api_key: int, version: int, body: dict[str, Any],
               *, client_id: str, timeout_s: float, security: PeerSecurity) -> dict[str, Any]:
    """One request on a fresh connection (ControlledShutdown, WriteTxnMarkers)."""
    async def exchange_once() -> dict[str, Any]:
        exchange = RequestExchange(client_id, MAX_RESPONSE_BYTES)
        reader, writer = await security.connect(endpoint, exchange)
        try:
            return await roundtrip(reader, writer, exchange, api_key, version, body)
        finally:
            writer.close()

    return await asyncio.wait_for(exchange_once(), timeout_s)


class NetworkChannel:
    def __init__(self, endpoint: BrokerEndpoint, controller_id: int, security: PeerSecurity,
                 *, timeout_s: float = 30.0) -> None:
        self.endpoint = endpoint
        self._client_id = f"controller-{controller_id}"
        self._security = security
        self._timeout_s = timeout_s
        self._queue: asyncio.Queue[ControllerMessage] = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-channel-{endpoint.node_id}")

    def send(self, message: ControllerMessage) -> None:
        self._queue.put_nowait(message)

    def close(self) -> None:
        self._task.cancel()

    async def drained(self) -> None:
        """Waits until every queued message was answered (tests, controlled shutdown)."""
        await self._queue.join()

    async def _connect(self) -> _Connection:
        exchange = RequestExchange(self._client_id, MAX_RESPONSE_BYTES)
        reader, writer = await self._security.connect(self.endpoint, exchange)
        return reader, writer, exchange

    async def _run(self) -> None:
        connection: _Connection | None = None
        try:
            while True:
                message = await self._queue.get()
                api_key, version, body = to_request(message)
                while True:
                    try:
                        if connection is None or connection[1].is_closing():
                            connection = await asyncio.wait_for(self._connect(),
                                                                self._timeout_s)
                        response = await asyncio.wait_for(
                            roundtrip(*connection, api_key, version, body), self._timeout_s)
                        break
                    except (TimeoutError, OSError, ConnectionError, ProtocolDecodeError) as exc:
                        log.info("controller channel to broker %d: %s; retrying",
                                 self.endpoint.node_id, exc or type(exc).__name__)
                        if connection is not None:
                            connection[1].close()
                        connection = None
                        await asyncio.sleep(RETRY_BACKOFF_S)
                self._queue.task_done()
                _log_errors(self.endpoint.node_id, type(message).__name__, response)
        finally:
            if connection is not None:
                connection[1].close()


def _log_errors(broker_id: int, name: str, response: dict[str, Any]) -> None:
    if response.get("error_code"):
        log.warning("broker %d answered %s with %s", broker_id, name,
                    error_for_code(response["error_code"]).__name__)
