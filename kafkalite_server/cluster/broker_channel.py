"""The controller's connection to one broker: controller messages as Kafka requests.

Messages queue and go out one at a time, in order, each awaiting its response (the
broker's per-partition errors are logged). A lost connection is re-opened with an
exponential backoff (:mod:`backoff`: 50 ms doubling to 1 s, as Kafka's clients reconnect)
and the unanswered message sent again, until the channel is closed. The first failure of
a message is logged, then one summary when it is delivered or the channel closes: the controller closes
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
import time
from typing import Any

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.errors import error_for_code
from kafkalite.protocol.exchange import RequestExchange
from kafkalite_server.cluster.backoff import ExponentialBackoff
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.messages import ControllerMessage, PartitionErrors
from kafkalite_server.cluster.queued_channel import QueuedChannel
from kafkalite_server.cluster.wire import partition_errors_from, to_request
from kafkalite_server.security.inter_broker import PeerSecurity, roundtrip

log = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 100 * 1024 * 1024
_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter, RequestExchange]


async def call(endpoint: BrokerEndpoint, api_key: int, version: int, body: dict[str, Any],
               *, client_id: str, timeout_s: float, security: PeerSecurity) -> dict[str, Any]:
    """One request on a fresh connection (ControlledShutdown, sent once per stop)."""
    async def exchange_once() -> dict[str, Any]:
        exchange = RequestExchange(client_id, MAX_RESPONSE_BYTES)
        reader, writer = await security.connect(endpoint, exchange)
        try:
            return await roundtrip(reader, writer, exchange, api_key, version, body)
        finally:
            writer.close()

    async with asyncio.timeout(timeout_s):
        return await exchange_once()


class NetworkChannel(QueuedChannel):
    def __init__(self, endpoint: BrokerEndpoint, controller_id: int, security: PeerSecurity,
                 *, loop: asyncio.AbstractEventLoop, timeout_s: float = 30.0) -> None:
        self.endpoint = endpoint
        self._client_id = f"controller-{controller_id}"
        self._security = security
        self._timeout_s = timeout_s
        self._connection: _Connection | None = None
        self._backoff = ExponentialBackoff()
        self._last_failure = ""
        self._sleep = asyncio.sleep
        super().__init__(loop, f"controller-channel-{endpoint.node_id}")

    async def _connect(self) -> _Connection:
        exchange = RequestExchange(self._client_id, MAX_RESPONSE_BYTES)
        reader, writer = await self._security.connect(self.endpoint, exchange)
        return reader, writer, exchange

    async def _deliver(self, message: ControllerMessage) -> PartitionErrors | None:
        name, broker_id = type(message).__name__, self.endpoint.node_id
        self._backoff.reset()
        started = time.monotonic()
        answer = None
        self._last_failure = ""
        try:
            answer = await self._send_until_answered(message)
        finally:
            if self._backoff.failures and answer is not None:
                log.info("controller channel to broker %d: %s delivered after %d failed "
                         "attempts over %.1f s", broker_id, name, self._backoff.failures,
                         time.monotonic() - started)
            elif self._backoff.failures:
                log.info("controller channel to broker %d: closed with %s undelivered "
                         "after %d failed attempts over %.1f s (last: %s)", broker_id, name,
                         self._backoff.failures, time.monotonic() - started,
                         self._last_failure)
        return answer

    async def _send_until_answered(self, message: ControllerMessage
                                   ) -> PartitionErrors | None:
        api_key, version, body = to_request(message)
        while not self.closed:
            try:
                async with asyncio.timeout(self._timeout_s):
                    if self._connection is None or self._connection[1].is_closing():
                        self._connection = await self._connect()
                    if self.closed:  # closed while connecting: nothing more goes out
                        break
                    response = await roundtrip(*self._connection, api_key, version, body)
            except (TimeoutError, OSError, ConnectionError, ProtocolDecodeError) as exc:
                self._last_failure = str(exc) or type(exc).__name__
                if not self._backoff.failures:
                    log.warning("controller channel to broker %d: %s not delivered: %s; "
                                "retrying with backoff", self.endpoint.node_id,
                                type(message).__name__, self._last_failure)
                self._release()
                await self._sleep(self._backoff.next_s())
                continue
            _log_errors(self.endpoint.node_id, type(message).__name__, response)
            return partition_errors_from(response, message)
        return None

    def _release(self) -> None:
        if self._connection is not None:
            self._connection[1].close()
            self._connection = None


def _log_errors(broker_id: int, name: str, response: dict[str, Any]) -> None:
    if response.get("error_code"):
        log.warning("broker %d answered %s with %s", broker_id, name,
                    error_for_code(response["error_code"]).__name__)
