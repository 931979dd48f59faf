"""The controller's connection to one broker: controller messages as Kafka requests.

Messages queue and go out one at a time, in order, each awaiting its response (the
broker's per-partition errors are logged). A lost connection is re-opened with a backoff
and the unanswered message sent again, until the channel is closed: the controller closes
a broker's channel when the broker leaves the cluster.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

from kafkalite.protocol import FrameDecoder, decode_response, encode_request
from kafkalite.protocol.errors import error_for_code
from kafkalite_server.cluster.image import BrokerEndpoint
from kafkalite_server.cluster.messages import ControllerMessage
from kafkalite_server.cluster.wire import to_request

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
MAX_RESPONSE_BYTES = 100 * 1024 * 1024


async def call(endpoint: BrokerEndpoint, api_key: int, version: int, body: dict[str, Any],
               *, client_id: str, timeout_s: float) -> dict[str, Any]:
    """One request on a fresh connection (ControlledShutdown, tests)."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(endpoint.host, endpoint.port), timeout_s)
    try:
        return await asyncio.wait_for(
            _exchange(reader, writer, api_key, version, 1, client_id, body), timeout_s)
    finally:
        writer.close()


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, api_key: int,
                    version: int, correlation_id: int, client_id: str,
                    body: dict[str, Any]) -> dict[str, Any]:
    writer.write(encode_request(api_key, version, correlation_id, client_id, body))
    await writer.drain()
    decoder = FrameDecoder(MAX_RESPONSE_BYTES)
    while True:
        data = await reader.read(64 * 1024)
        if not data:
            raise ConnectionResetError(f"connection closed awaiting api key {api_key}")
        frames = decoder.feed(data)
        if frames:
            got, response = decode_response(api_key, version, frames[0])
            if got != correlation_id:
                raise ConnectionResetError(f"correlation id {got}, expected {correlation_id}")
            return response


class NetworkChannel:
    def __init__(self, endpoint: BrokerEndpoint, controller_id: int, *,
                 timeout_s: float = 30.0) -> None:
        self.endpoint = endpoint
        self._client_id = f"controller-{controller_id}"
        self._timeout_s = timeout_s
        self._queue: asyncio.Queue[ControllerMessage] = asyncio.Queue()
        self._correlation = itertools.count(1)
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-channel-{endpoint.node_id}")

    def send(self, message: ControllerMessage) -> None:
        self._queue.put_nowait(message)

    def close(self) -> None:
        self._task.cancel()

    async def drained(self) -> None:
        await self._queue.join()

    async def _run(self) -> None:
        writer: asyncio.StreamWriter | None = None
        reader: asyncio.StreamReader | None = None
        try:
            while True:
                message = await self._queue.get()
                api_key, version, body = to_request(message)
                while True:
                    try:
                        if writer is None or writer.is_closing():
                            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                                self.endpoint.host, self.endpoint.port), self._timeout_s)
                        assert reader is not None and writer is not None
                        response = await asyncio.wait_for(_exchange(
                            reader, writer, api_key, version, next(self._correlation),
                            self._client_id, body), self._timeout_s)
                        break
                    except (TimeoutError, OSError, ConnectionError) as exc:
                        log.info("controller channel to broker %d: %s; retrying",
                                 self.endpoint.node_id, exc or type(exc).__name__)
                        if writer is not None:
                            writer.close()
                        writer = None
                        await asyncio.sleep(RETRY_BACKOFF_S)
                self._queue.task_done()
                _log_errors(self.endpoint.node_id, type(message).__name__, response)
        finally:
            if writer is not None:
                writer.close()


def _log_errors(broker_id: int, name: str, response: dict[str, Any]) -> None:
    if response.get("error_code"):
        log.warning("broker %d answered %s with %s", broker_id, name,
                    error_for_code(response["error_code"]).__name__)
