"""One TCP connection to one broker: framing, correlation ids and version negotiation.

A :class:`BrokerConnection` owns a non-blocking socket and is driven by the client's I/O
thread (:mod:`kafkalite.client.client`): every method runs on that thread, so there are no
locks here. Requests are pipelined; responses come back in request order (the protocol
guarantees it) and are matched strictly by correlation id, any mismatch meaning the stream is
broken. The first request is ApiVersions; requests queued before it is answered wait, and then
each API is spoken at the highest version both sides support.

With TLS the socket is wrapped once connected and the handshake is driven by the selector
events (HANDSHAKING). With SASL, as Kafka's clients do, ApiVersions is followed by
SaslHandshake v1 and the mechanism's SaslAuthenticate rounds (AUTHENTICATING); only then is
the connection READY. A refused handshake or wrong credentials close the connection and fail
every waiting request with the broker's typed error (SASL_AUTHENTICATION_FAILED ...).
"""

from __future__ import annotations

import enum
import errno as errno_codes
import logging
import selectors
import socket
import ssl
import struct
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from kafkalite.client.future import Future
from kafkalite.client.security import ClientSecurity, SaslExchange
from kafkalite.errors import (
    IncompatibleBrokerVersionError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolDecodeError,
)
from kafkalite.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    FrameDecoder,
    decode_response,
    encode_request,
)
from kafkalite.protocol.errors import (
    SaslAuthenticationFailedError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkalite.protocol.scram import ScramError

log = logging.getLogger(__name__)

Response = dict[str, Any]
_RECV_BYTES = 256 * 1024
_MAX_CORRELATION_ID = 2**31 - 1
_SOFTWARE_NAME = "kafkalite"
_SOFTWARE_VERSION = "0.1.0"
_CORRELATION_ID = struct.Struct(">i")
_UNSUPPORTED_VERSION_CODE = struct.pack(">h", UnsupportedVersionError.errno)


class ConnectionState(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    HANDSHAKING = "handshaking"
    NEGOTIATING = "negotiating"
    AUTHENTICATING = "authenticating"
    READY = "ready"


class _InFlight(NamedTuple):
    correlation_id: int
    api_key: int
    api_version: int
    future: Future[Response]
    deadline: float


class _Queued(NamedTuple):
    api_key: int
    body: Mapping[str, Any]
    future: Future[Response]
    expect_response: bool


def pick_version(api_key: int, broker_range: tuple[int, int] | None) -> int:
    """The highest version in our range and the broker's; a typed error if they are disjoint."""
    ours = SUPPORTED_VERSIONS.get(ApiKey(api_key))
    if ours is None or broker_range is None:
        raise IncompatibleBrokerVersionError(f"the broker does not support api key {api_key}")
    low, high = max(ours[0], broker_range[0]), min(ours[1], broker_range[1])
    if low > high:
        raise IncompatibleBrokerVersionError(
            f"api key {api_key}: we speak versions {ours[0]}-{ours[1]}, the broker "
            f"{broker_range[0]}-{broker_range[1]}"
        )
    return high


class BrokerConnection:
    """A pipelined connection to ``host:port``; see the module docstring."""

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        *,
        client_id: str | None,
        request_timeout_ms: int,
        selector: selectors.BaseSelector,
        max_frame_bytes: int = 100 * 1024 * 1024,
        socket_options: Sequence[tuple[int, int, int]] = (
            (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
        request_counts: Counter[int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        security: ClientSecurity | None = None,
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.state = ConnectionState.DISCONNECTED
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self._versions: dict[int, int] = {}
        self._clock = clock
        self._max_frame_bytes = max_frame_bytes
        self._sock: socket.socket | None = None
        self._socket_options = tuple(socket_options)
        self.request_counts: Counter[int] = Counter() if request_counts is None \
            else request_counts
        """Requests sent, by api key (shared with the client, for ``metrics()``)."""
        self.last_activity = clock()
        """When a request was last sent or a response last received (for idle closing)."""
        self._selector = selector
        self._events = 0
        self._decoder = FrameDecoder(max_frame_bytes)
        self._received: memoryview | None = None
        """Where ``recv_into`` lands bytes while a socket is open: ``recv(256 KiB)`` would
        allocate (and, past malloc's mmap threshold, map and unmap) 256 KiB for every
        read, even a 60-byte produce response; that cost 15 µs a response."""
        self._out = bytearray()
        self._written = 0
        self._queued_bytes = 0
        self._on_written: deque[tuple[int, Future[Response]]] = deque()
        self._in_flight: deque[_InFlight] = deque()
        self._waiting: list[_Queued] = []
        self._correlation_id = 0
        self._connect_deadline = 0.0
        self._security = security
        self._sasl: SaslExchange | None = None
        self.last_error: BaseException | None = None
        """Why the connection last closed (None: closed on purpose)."""
        self.on_state_change: Callable[[BrokerConnection], None] | None = None
        self.on_output: Callable[[BrokerConnection], None] | None = None
        """If set, a queued request is not written at once: this is called instead, and the
        owner calls :meth:`flush_output` later, so that requests queued together leave in
        one ``send`` (each socket call hands the GIL to the application's threads)."""

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port} {self.state.value}>"

    # -- socket lifecycle ------------------------------------------------------------------

    def connect(self) -> None:
        """Start a non-blocking connect; progress arrives through :meth:`handle_write`."""
        if self.state is not ConnectionState.DISCONNECTED:
            return
        try:
            infos = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)
        except OSError as exc:
            self._fail_everything(KafkaConnectionError(f"cannot resolve {self.host}: {exc}"))
            return
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        self._sock = sock
        self._received = memoryview(bytearray(_RECV_BYTES))
        try:
            for level, option, value in self._socket_options:
                sock.setsockopt(level, option, value)
        except OSError as exc:
            self.close(KafkaConnectionError(f"socket_options: {exc}"))
            return
        self.last_activity = self._clock()
        self._connect_deadline = self._clock() + self.request_timeout
        self._set_state(ConnectionState.CONNECTING)
        self._events = selectors.EVENT_READ | selectors.EVENT_WRITE
        self._selector.register(sock, self._events, self)
        code = sock.connect_ex(address)
        if code not in (0, errno_codes.EINPROGRESS, errno_codes.EWOULDBLOCK):
            self.close(KafkaConnectionError(f"connect to {self.host}:{self.port}: "
                                            f"{errno_codes.errorcode.get(code, code)}"))

    def _update_interest(self, want_write: bool = False) -> None:
        """Ask the selector for writability only while there is something to write."""
        if self._sock is None:
            return
        writing = want_write or bool(self._out)
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if writing else 0)
        if events != self._events:
            self._events = events
            self._selector.modify(self._sock, events, self)

    def is_ready(self) -> bool:
        return self.state is ConnectionState.READY

    @property
    def in_flight_count(self) -> int:
        return len(self._in_flight)

    def close(self, error: BaseException | None = None) -> None:
        """Close the socket and fail every pending request with ``error``."""
        if self._sock is not None:
            self._selector.unregister(self._sock)
            self._sock.close()
            self._sock = None
        self._received = None
        self._out.clear()
        self._decoder = FrameDecoder(self._max_frame_bytes)
        self._versions.clear()
        self.last_error = error
        was = self.state
        if was is not ConnectionState.DISCONNECTED:
            log.debug("closing %r: %s", self, error)
        self.state = ConnectionState.DISCONNECTED
        self._fail_everything(error or KafkaConnectionError(f"connection to node {self.node_id} "
                                                            "closed"))
        if was is not ConnectionState.DISCONNECTED and self.on_state_change is not None:
            self.on_state_change(self)

    def _fail_everything(self, error: BaseException) -> None:
        pending = [entry.future for entry in self._in_flight]
        pending += [entry.future for entry in self._waiting]
        pending += [future for _, future in self._on_written]
        self._in_flight.clear()
        self._waiting.clear()
        self._on_written.clear()
        for future in pending:
            if not future.is_done():
                future.failure(error)

    def _set_state(self, state: ConnectionState) -> None:
        self.state = state
        if self.on_state_change is not None:
            self.on_state_change(self)

    # -- requests --------------------------------------------------------------------------

    def api_version(self, api_key: int) -> int:
        """The negotiated version of ``api_key`` (only valid once READY)."""
        version = self._versions.get(api_key)
        if version is None:
            version = pick_version(api_key, self.broker_versions.get(api_key))
            self._versions[api_key] = version
        return version

    def send(
        self, api_key: int, body: Mapping[str, Any], *, expect_response: bool = True
    ) -> Future[Response]:
        """Queue a request. Without a response (Produce acks=0) the future completes with an
        empty dict once the bytes are handed to the kernel."""
        future: Future[Response] = Future()
        if self.state is ConnectionState.READY:
            self._send_now(api_key, body, future, expect_response)
        elif self.state is ConnectionState.DISCONNECTED:
            future.failure(KafkaConnectionError(f"node {self.node_id} is not connected"))
        else:
            self._waiting.append(_Queued(api_key, body, future, expect_response))
        return future

    def _send_now(self, api_key: int, body: Mapping[str, Any], future: Future[Response],
                  expect_response: bool, version: int | None = None) -> None:
        try:
            if version is None:
                version = self.api_version(api_key)
            correlation_id = self._next_correlation_id()
            frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        except Exception as exc:  # a bad body fails its own request, not the connection
            future.failure(exc)
            return
        self._out += frame
        self._queued_bytes += len(frame)
        self.last_activity = self._clock()
        self.request_counts[api_key] += 1
        if expect_response:
            self._in_flight.append(_InFlight(correlation_id, api_key, version, future,
                                             self._clock() + self.request_timeout))
        else:
            self._on_written.append((self._queued_bytes, future))
        if self.on_output is None:
            self._flush()
        else:
            self.on_output(self)

    def flush_output(self) -> None:
        """Write what :meth:`send` queued (see :attr:`on_output`); the selector finishes
        what the socket does not take now."""
        self._flush()

    def _next_correlation_id(self) -> int:
        self._correlation_id = (self._correlation_id + 1) & _MAX_CORRELATION_ID
        return self._correlation_id

    # -- I/O events ------------------------------------------------------------------------

    def handle_write(self) -> None:
        if self.state is ConnectionState.CONNECTING:
            assert self._sock is not None
            code = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self.close(KafkaConnectionError(
                    f"connect to {self.host}:{self.port}: {errno_codes.errorcode.get(code, code)}"))
                return
            if self._security is not None and self._security.ssl_context is not None:
                self._start_tls(self._security.ssl_context)
                return
            self._update_interest()
            self._start_negotiation(max(SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]))
            return
        if self.state is ConnectionState.HANDSHAKING:
            self._continue_tls()
            return
        self._flush()

    # -- TLS ---------------------------------------------------------------------------------

    def _start_tls(self, context: ssl.SSLContext) -> None:
        plain = self._sock
        assert plain is not None
        self._selector.unregister(plain)
        try:
            self._sock = context.wrap_socket(plain, server_hostname=self.host,
                                             do_handshake_on_connect=False)
        except (OSError, ValueError) as exc:
            self._sock = None
            plain.close()
            self.close(KafkaConnectionError(f"TLS to {self.host}:{self.port}: {exc}"))
            return
        self._events = selectors.EVENT_READ | selectors.EVENT_WRITE
        self._selector.register(self._sock, self._events, self)
        self._set_state(ConnectionState.HANDSHAKING)
        self._continue_tls()

    def _continue_tls(self) -> None:
        sock = self._sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._update_interest()
            return
        except ssl.SSLWantWriteError:
            self._update_interest(want_write=True)
            return
        except (OSError, ValueError) as exc:
            self.close(KafkaConnectionError(f"TLS handshake with {self.host}:{self.port} "
                                            f"failed: {exc}"))
            return
        self._update_interest()
        self._start_negotiation(max(SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]))

    def _flush(self) -> None:
        sock = self._sock
        if sock is None or not self._out or self.state in (ConnectionState.CONNECTING,
                                                           ConnectionState.HANDSHAKING):
            return
        try:
            sent = sock.send(self._out)
        except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError,
                ssl.SSLWantReadError):
            self._update_interest()
            return
        except OSError as exc:
            self.close(KafkaConnectionError(f"send to node {self.node_id}: {exc}"))
            return
        del self._out[:sent]
        self._written += sent
        while self._on_written and self._on_written[0][0] <= self._written:
            self._on_written.popleft()[1].success({})
        self._update_interest()

    def handle_read(self) -> None:
        if self.state is ConnectionState.HANDSHAKING:
            self._continue_tls()
            return
        sock = self._sock
        received = self._received
        while sock is not None and self._sock is sock and received is not None:
            try:
                count = sock.recv_into(received)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                    ssl.SSLWantWriteError):
                return
            except OSError as exc:
                self.close(KafkaConnectionError(f"receive from node {self.node_id}: {exc}"))
                return
            if not count:
                self.close(KafkaConnectionError(f"node {self.node_id} closed the connection"))
                return
            try:
                frames = self._decoder.feed(received[:count])
            except ProtocolDecodeError as exc:
                self.close(KafkaConnectionError(f"node {self.node_id}: {exc}"))
                return
            for frame in frames:
                if self._sock is not sock:
                    return
                self._handle_frame(frame)
            if count < _RECV_BYTES and not (
                    isinstance(sock, ssl.SSLSocket) and sock.pending()):
                return

    def _handle_frame(self, frame: bytearray) -> None:
        self.last_activity = self._clock()
        if not self._in_flight:
            self.close(KafkaConnectionError(f"node {self.node_id} sent an unrequested response"))
            return
        entry = self._in_flight[0]
        try:
            correlation_id, body = self._decode(entry, frame)
        except ProtocolDecodeError as exc:
            error = KafkaConnectionError(f"node {self.node_id}: undecodable response: {exc}")
            error.__cause__ = exc  # callers can tell a malformed answer from a lost connection
            self.close(error)
            return
        if correlation_id != entry.correlation_id:
            self.close(KafkaConnectionError(
                f"node {self.node_id}: correlation id {correlation_id} does not match the "
                f"expected {entry.correlation_id}"))
            return
        self._in_flight.popleft()
        entry.future.success(body)

    def _decode(self, entry: _InFlight, frame: bytearray) -> tuple[int, Response]:
        try:
            return decode_response(entry.api_key, entry.api_version, frame)
        except ProtocolDecodeError:
            if entry.api_key != ApiKey.API_VERSIONS or entry.api_version == 0:
                raise
        # A broker that does not know our ApiVersions version answers in v0 format; some
        # (librdkafka's mock cluster) in a format of their own: then only the error code
        # counts, and UNSUPPORTED_VERSION makes us retry with v0.
        try:
            return decode_response(ApiKey.API_VERSIONS, 0, frame)
        except ProtocolDecodeError:
            if frame[4:6] != _UNSUPPORTED_VERSION_CODE:
                raise
            return _CORRELATION_ID.unpack_from(frame)[0], {
                "error_code": UnsupportedVersionError.errno, "api_keys": []}

    def check_timeouts(self) -> float | None:
        """Close the connection if a request or the connect is overdue; the next deadline."""
        now = self._clock()
        if self.state in (ConnectionState.CONNECTING, ConnectionState.HANDSHAKING):
            if now >= self._connect_deadline:
                self.close(KafkaTimeoutError(f"connect to {self.host}:{self.port} timed out"))
                return None
            return self._connect_deadline
        if not self._in_flight:
            return None
        deadline = min(entry.deadline for entry in self._in_flight)
        if now >= deadline:
            self.close(KafkaTimeoutError(
                f"node {self.node_id}: no response within {self.request_timeout:g} s"))
            return None
        return deadline

    # -- ApiVersions negotiation -------------------------------------------------------------

    def _start_negotiation(self, version: int) -> None:
        self.state = ConnectionState.NEGOTIATING
        future: Future[Response] = Future()
        body = {"client_software_name": _SOFTWARE_NAME,
                "client_software_version": _SOFTWARE_VERSION}
        self._send_now(ApiKey.API_VERSIONS, body, future, True, version=version)
        future.add_callback(self._on_api_versions, version)

    def _on_api_versions(self, version: int, body: Response) -> None:
        ranges = {entry["api_key"]: (entry["min_version"], entry["max_version"])
                  for entry in body["api_keys"]}
        error = body["error_code"]
        if error == UnsupportedVersionError.errno and version > 0:
            broker_max = ranges.get(ApiKey.API_VERSIONS, (0, 0))[1]
            self._start_negotiation(min(broker_max, version - 1))
            return
        if error:
            self.close(error_for_code(error)(f"ApiVersions v{version} from node {self.node_id}"))
            return
        self.broker_versions = ranges
        if self._security is not None and self._security.sasl is not None:
            self._start_sasl(self._security.sasl.exchange())
            return
        self._become_ready()

    def _become_ready(self) -> None:
        self._set_state(ConnectionState.READY)
        waiting, self._waiting = self._waiting, []
        for queued in waiting:
            self._send_now(queued.api_key, queued.body, queued.future, queued.expect_response)

    # -- SASL ------------------------------------------------------------------------------

    def _start_sasl(self, exchange: SaslExchange) -> None:
        self._sasl = exchange
        self._set_state(ConnectionState.AUTHENTICATING)
        future: Future[Response] = Future()
        try:
            version = self.api_version(ApiKey.SASL_HANDSHAKE)
            self.api_version(ApiKey.SASL_AUTHENTICATE)
            if version < 1:
                raise IncompatibleBrokerVersionError("SaslHandshake v1 is needed")
        except IncompatibleBrokerVersionError as exc:
            self.close(IncompatibleBrokerVersionError(
                f"node {self.node_id} does not offer SASL (SaslHandshake v1 and "
                f"SaslAuthenticate): {exc}"))
            return
        self._send_now(ApiKey.SASL_HANDSHAKE, {"mechanism": exchange.credentials.mechanism},
                       future, True, version=version)
        future.add_callback(self._on_sasl_handshake)

    def _on_sasl_handshake(self, body: Response) -> None:
        assert self._sasl is not None
        if body["error_code"]:
            self.close(error_for_code(body["error_code"])(
                f"node {self.node_id} refused SASL mechanism "
                f"{self._sasl.credentials.mechanism}; it offers {body['mechanisms']}"))
            return
        self._send_sasl_token(self._sasl.first())

    def _send_sasl_token(self, token: bytes) -> None:
        future: Future[Response] = Future()
        self._send_now(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token}, future, True)
        future.add_callback(self._on_sasl_token)

    def _on_sasl_token(self, body: Response) -> None:
        exchange = self._sasl
        assert exchange is not None
        if body["error_code"]:
            self.close(error_for_code(body["error_code"])(
                f"node {self.node_id}: {body['error_message'] or 'authentication failed'}"))
            return
        try:
            reply = exchange.next(bytes(body["auth_bytes"]))
        except ScramError as exc:
            self.close(SaslAuthenticationFailedError(f"node {self.node_id}: {exc}"))
            return
        if reply is not None:
            self._send_sasl_token(reply)
            return
        self._sasl = None
        self._become_ready()
