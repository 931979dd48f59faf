"""One broker connection driven by the asyncio event loop.

The asyncio twin of :class:`~kafkalite.client.connection.BrokerConnection`, over the same
sans-IO pieces: correlation ids, framing and response matching are
:class:`~kafkalite.protocol.exchange.RequestExchange`, the setup steps (TCP, TLS, ApiVersions,
SASL) move through :class:`~kafkalite.client.connection_state.ConnectionSetup`'s one
transition table, versions are picked by :func:`~kafkalite.client.connection.pick_version`
and SASL tokens come from :class:`~kafkalite.client.security.SaslExchange`. What is left
here is moving bytes: asyncio streams write frames and a reader task feeds the exchange,
completing each request's :class:`asyncio.Future`.

Requests are pipelined and answered in order; a request that outlives ``request_timeout_ms``
closes the connection (its stream can no longer be trusted), failing everything in flight
with an error that names the broker's address, as the threaded client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import socket
import ssl
import struct
from collections.abc import Mapping
from typing import Any

from kafkalite.client.connection import pick_version
from kafkalite.client.connection_state import ConnectionSetup, ConnectionState, Event
from kafkalite.client.failures import (
    address_of,
    connection_error,
    describe_close,
    describe_tls_error,
)
from kafkalite.client.security import ClientSecurity
from kafkalite.errors import (
    IncompatibleBrokerVersionError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolDecodeError,
)
from kafkalite.protocol import SUPPORTED_VERSIONS, ApiKey, FrameTooLargeError
from kafkalite.protocol.errors import (
    SaslAuthenticationFailedError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkalite.protocol.exchange import RequestExchange
from kafkalite.protocol.scram import ScramError

log = logging.getLogger(__name__)

Response = dict[str, Any]
_READ_BYTES = 256 * 1024
_FRAME_SIZE = struct.Struct(">i")
_SOFTWARE_NAME = "kafkalite-aio"
_SOFTWARE_VERSION = "0.1.0"


class _AwaitedToken:
    """An aiokafka token provider whose ``token()`` coroutine was awaited for this login,
    as the SDK's sans-IO SASL exchange takes it (a plain ``token()``)."""

    def __init__(self, token: str, provider: Any) -> None:
        self._token = token
        self._provider = provider

    def token(self) -> str:
        return self._token

    def extensions(self) -> Mapping[str, str]:
        extensions = getattr(self._provider, "extensions", None)
        return {} if extensions is None else dict(extensions())


class AIOConnection:
    """A pipelined connection to ``host:port``; :meth:`open` sets it up, :meth:`request`
    awaits one answer."""

    def __init__(self, node_id: int, host: str, port: int, *, client_id: str | None,
                 request_timeout_ms: int, security: ClientSecurity | None = None,
                 max_frame_bytes: int = 100 * 1024 * 1024) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.address = address_of(host, port)
        self.request_timeout = request_timeout_ms / 1000
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self._security = security
        self._tls = None if security is None else security.ssl_context
        self._setup = ConnectionSetup(tls=self._tls is not None,
                                      sasl=security is not None and security.sasl is not None)
        self._exchange = RequestExchange(client_id, max_frame_bytes)
        self._max_frame_bytes = max_frame_bytes
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._answered = False
        self.last_error: BaseException | None = None

    def __repr__(self) -> str:
        return f"<AIOConnection node={self.node_id} {self.address} {self.state.value}>"

    @property
    def state(self) -> ConnectionState:
        return self._setup.state

    def is_ready(self) -> bool:
        return self.state is ConnectionState.READY

    # -- setup -----------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, shake hands (TLS), agree versions and authenticate (SASL); raises the
        typed error that closed the connection if a step fails."""
        self._setup.handle(Event.CONNECT)
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                self.host, self.port, ssl=self._tls,
                server_hostname=self.host if self._tls is not None else None,
                limit=_READ_BYTES), self.request_timeout)
        except (TimeoutError, OSError, ssl.SSLError) as exc:
            error: BaseException
            if isinstance(exc, asyncio.TimeoutError):
                error = KafkaTimeoutError(
                    f"connecting to {self.address} timed out after {self.request_timeout:g} s")
            elif isinstance(exc, ssl.SSLError):
                error = connection_error(describe_tls_error(self.address, exc), exc)
            else:
                error = connection_error(
                    f"cannot connect to {self.address}: {exc.strerror or exc}", exc)
            self._close(error)
            raise error from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._writer = writer
        self._setup.handle(Event.TCP_CONNECTED)
        if self._setup.state is ConnectionState.HANDSHAKING:
            self._setup.handle(Event.TLS_ESTABLISHED)  # open_connection did the handshake
        self._reader_task = asyncio.get_running_loop().create_task(self._read(reader))
        try:
            await self._negotiate(max(SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]))
            if self._setup.state is ConnectionState.AUTHENTICATING:
                await self._authenticate()
        except BaseException as exc:
            self._close(exc if isinstance(exc, Exception) else None)
            raise

    async def _negotiate(self, version: int) -> None:
        body = {"client_software_name": _SOFTWARE_NAME,
                "client_software_version": _SOFTWARE_VERSION}
        while True:
            answer = await self._request_at(ApiKey.API_VERSIONS, version, body)
            ranges = {entry["api_key"]: (entry["min_version"], entry["max_version"])
                      for entry in answer["api_keys"]}
            error = answer["error_code"]
            if error == UnsupportedVersionError.errno and version > 0:
                version = min(ranges.get(ApiKey.API_VERSIONS, (0, 0))[1], version - 1)
                continue
            if error:
                raise error_for_code(error)(f"ApiVersions v{version} from {self.address}")
            self.broker_versions = ranges
            self._setup.handle(Event.VERSIONS_AGREED)
            return

    async def _authenticate(self) -> None:
        assert self._security is not None and self._security.sasl is not None
        credentials = self._security.sasl
        provider = credentials.token_provider
        if provider is not None and inspect.iscoroutinefunction(provider.token):
            credentials = dataclasses.replace(
                credentials, token_provider=_AwaitedToken(await provider.token(), provider))
        exchange = credentials.exchange()
        try:
            if self.api_version(ApiKey.SASL_HANDSHAKE) < 1:
                raise IncompatibleBrokerVersionError("SaslHandshake v1 is needed")
            self.api_version(ApiKey.SASL_AUTHENTICATE)
        except IncompatibleBrokerVersionError as exc:
            raise IncompatibleBrokerVersionError(
                f"{self.address} does not offer SASL (SaslHandshake v1 and "
                f"SaslAuthenticate): {exc}") from exc
        mechanism = exchange.credentials.mechanism
        answer = await self.request(ApiKey.SASL_HANDSHAKE, {"mechanism": mechanism})
        if answer["error_code"]:
            raise error_for_code(answer["error_code"])(
                f"{self.address} refused SASL mechanism {mechanism}; it offers "
                f"{answer['mechanisms']}")
        token: bytes | None = exchange.first()
        while token is not None:
            answer = await self.request(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token})
            if answer["error_code"]:
                raise error_for_code(answer["error_code"])(
                    f"{self.address}: {answer['error_message'] or 'authentication failed'}")
            try:
                token = exchange.next(bytes(answer["auth_bytes"]))
            except ScramError as exc:
                raise SaslAuthenticationFailedError(f"{self.address}: {exc}") from exc
        self._setup.handle(Event.AUTHENTICATED)

    # -- requests --------------------------------------------------------------------------

    def api_version(self, api_key: int) -> int:
        """The version of ``api_key`` both sides speak (once versions are agreed)."""
        return pick_version(api_key, self.broker_versions.get(api_key))

    def send(self, api_key: int, body: Mapping[str, Any], *, expect_response: bool = True,
             version: int | None = None) -> asyncio.Future[Response]:
        """Write a request now; its answer's future (done at once, with ``{}``, when no
        answer is expected). A body that does not encode fails only its own future."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Response] = loop.create_future()
        writer = self._writer
        if writer is None or self.state is ConnectionState.DISCONNECTED:
            future.set_exception(self.last_error or KafkaConnectionError(
                f"not connected to {self.address}"))
            return future
        try:
            frame = self._exchange.request(
                api_key, self.api_version(api_key) if version is None else version, body,
                context=future, deadline=loop.time() + self.request_timeout,
                expect_response=expect_response)
        except Exception as exc:
            future.set_exception(exc)
            return future
        writer.write(frame)
        if not expect_response:
            future.set_result({})
        else:
            loop.call_at(loop.time() + self.request_timeout, self._check_timeout, future)
        return future

    async def request(self, api_key: int, body: Mapping[str, Any], *,
                      expect_response: bool = True) -> Response:
        """Send a request and await its answer."""
        future = self.send(api_key, body, expect_response=expect_response)
        await self.drain()
        return await future

    async def _request_at(self, api_key: int, version: int, body: Mapping[str, Any]
                          ) -> Response:
        future = self.send(api_key, body, version=version)
        await self.drain()
        return await future

    async def drain(self) -> None:
        """Wait while the socket's send buffer is over its high-water mark."""
        writer = self._writer
        if writer is not None:
            try:
                await writer.drain()
            except (OSError, RuntimeError) as exc:
                self._close(connection_error(
                    f"connection to {self.address} lost while sending: {exc}", exc))

    def _check_timeout(self, future: asyncio.Future[Response]) -> None:
        if not future.done():
            self._close(KafkaTimeoutError(
                f"{self.address}: no response within {self.request_timeout:g} s"))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        """Read each response frame whole (its size, then exactly that many bytes) and hand
        it to the exchange: one copy out of the stream's buffer per frame, where feeding
        256 KiB reads through a frame decoder copied a large Fetch answer three more
        times."""
        exchange = self._exchange
        while True:
            try:
                (size,) = _FRAME_SIZE.unpack(await reader.readexactly(4))
                self._answered = True
                if size < 0 or size > self._max_frame_bytes:
                    raise FrameTooLargeError(size, self._max_frame_bytes)
                frame = await reader.readexactly(size)
            except asyncio.IncompleteReadError as exc:
                self._answered = self._answered or bool(exc.partial)
                self._close(connection_error(describe_close(
                    self.address, self._setup.state, tls=self._tls is not None,
                    answered=self._answered)))
                return
            except (OSError, ssl.SSLError) as exc:
                self._close(connection_error(
                    f"connection to {self.address} lost: {exc}", exc))
                return
            except FrameTooLargeError as exc:
                self._close(connection_error(f"{self.address}: undecodable response: {exc}",
                                             exc))
                return
            try:
                response = exchange.receive_frame(frame)
            except ProtocolDecodeError as exc:
                self._close(connection_error(f"{self.address}: undecodable response: {exc}",
                                             exc))
                return
            future: asyncio.Future[Response] = response.context
            if not future.done():
                future.set_result(response.body)

    # -- closing ---------------------------------------------------------------------------

    def _close(self, error: BaseException | None) -> None:
        if self.state is ConnectionState.DISCONNECTED:
            return
        self.last_error = error
        log.debug("closing %r: %s", self, error)
        self._setup.handle(Event.CLOSED)
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        task = self._reader_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._reader_task = None
        failure = error or KafkaConnectionError(f"connection to {self.address} closed")
        for future in self._exchange.abandon():
            if future is not None and not future.done():
                future.set_exception(failure)

    async def close(self) -> None:
        """Close on purpose: requests in flight fail with a connection error."""
        writer = self._writer
        task = self._reader_task
        self._close(None)
        if writer is not None:
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
