"""The controller's connection to one broker: controller messages as Kafka requests.

Messages queue and go out one at a time, in order, each awaiting its response (the
broker's per-partition errors are logged). A lost connection is re-opened with a backoff
and the unanswered message sent again, until the channel is closed: the controller closes
a broker's channel when the broker leaves the cluster, and a closed channel never sends
again. Each message names the incarnation it is for (its broker epoch), so even one that
was on the wire when the broker left is refused by the next incarnation. Connections use
the inter-broker listener's security protocol (:mod:`kafkalite_server.security.inter_broker`).

Timeouts use ``asyncio.timeout``, not ``asyncio.wait_for``: in Python 3.11 ``wait_for``
can swallow a cancellation that arrives as its operation completes, and a channel whose
cancellation was lost would go on re-sending to a broker that left.
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

    async with asyncio.timeout(timeout_s):
        return await exchange_once()


class NetworkChannel:
    def __init__(self, endpoint: BrokerEndpoint, controller_id: int, security: PeerSecurity,
                 *, timeout_s: float = 30.0) -> None:
        self.endpoint = endpoint
        self._client_id = f"controller-{controller_id}"
        self._security = security
        self._timeout_s = timeout_s
        self._queue: asyncio.Queue[ControllerMessage] = asyncio.Queue()
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-channel-{endpoint.node_id}")

    def send(self, message: ControllerMessage) -> None:
        if not self.closed:
            self._queue.put_nowait(message)

    def close(self) -> None:
        """Stops at once; checked between every step too, so a cancellation lost in a
        library cannot keep the channel going."""
        self.closed = True
        self._task.cancel()

    async def drained(self) -> None:
        """Waits until every queued message was answered, or the channel closed (tests,
        controlled shutdown)."""
        joined = asyncio.ensure_future(self._queue.join())
        try:
            await asyncio.wait([joined, self._task], return_when=asyncio.FIRST_COMPLETED)
        finally:
            joined.cancel()

    async def _connect(self) -> _Connection:
        exchange = RequestExchange(self._client_id, MAX_RESPONSE_BYTES)
        reader, writer = await self._security.connect(self.endpoint, exchange)
        return reader, writer, exchange

    async def _run(self) -> None:
        connection: _Connection | None = None
        try:
            while not self.closed:
                message = await self._queue.get()
                api_key, version, body = to_request(message)
                while not self.closed:
                    try:
                        async with asyncio.timeout(self._timeout_s):
                            if connection is None or connection[1].is_closing():
                                connection = await self._connect()
                            response = await roundtrip(*connection, api_key, version, body)
                        break
                    except (TimeoutError, OSError, ConnectionError, ProtocolDecodeError) as exc:
                        log.info("controller channel to broker %d: %s; retrying",
                                 self.endpoint.node_id, exc or type(exc).__name__)
                        if connection is not None:
                            connection[1].close()
                        connection = None
                        await asyncio.sleep(RETRY_BACKOFF_S)
                else:
                    return
                self._queue.task_done()
                _log_errors(self.endpoint.node_id, type(message).__name__, response)
        finally:
            if connection is not None:
                connection[1].close()


def _log_errors(broker_id: int, name: str, response: dict[str, Any]) -> None:
    if response.get("error_code"):
        log.warning("broker %d answered %s with %s", broker_id, name,
                    error_for_code(response["error_code"]).__name__)
