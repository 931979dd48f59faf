"""One TCP connection to one broker: the socket, TLS, version negotiation and SASL.

A :class:`BrokerConnection` owns a non-blocking socket and is driven by the client's I/O
thread (:mod:`kafkalite.client.client`): every method runs on that thread, so there are no
locks here. It only moves bytes: correlation ids, framing and response matching are the
sans-IO :class:`~kafkalite.protocol.exchange.RequestExchange` the broker's peer connections
use too, and the connection's states and their transitions are the one table of
:mod:`kafkalite.client.connection_state`.

Requests are pipelined; responses come back in request order (the protocol guarantees it)
and are matched strictly by correlation id, any mismatch meaning the stream is broken. The
first request is ApiVersions; requests queued before it is answered wait, and then each API
is spoken at the highest version both sides support.

With TLS the socket is wrapped once connected and the handshake is driven by the selector
events (HANDSHAKING). With SASL, as Kafka's clients do, ApiVersions is followed by
SaslHandshake v1 and the mechanism's SaslAuthenticate rounds (AUTHENTICATING); only then is
the connection READY. A refused handshake or wrong credentials close the connection and fail
every waiting request with the broker's typed error (SASL_AUTHENTICATION_FAILED ...).

Every close carries an error that names the broker's address and the cause, as a person
would want to read it (:mod:`kafkalite.client.failures`): the client keeps the latest per
address, and timeouts far from the socket name it.
"""

from __future__ import annotations

import errno as errno_codes
import logging
import selectors
import socket
import ssl
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from kafkalite.client.connection_state import (
    ConnectionSetup,
    ConnectionState,
    Event,
)
from kafkalite.client.failures import (
    address_of,
    connection_error,
    describe_close,
    describe_connect_error,
    describe_resolve_error,
    describe_tls_answer,
    describe_tls_error,
    looks_like_tls,
)
from kafkalite.client.future import Future
from kafkalite.client.security import ClientSecurity, SaslExchange
from kafkalite.errors import (
    IncompatibleBrokerVersionError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolDecodeError,
)
from kafkalite.protocol import SUPPORTED_VERSIONS, ApiKey
from kafkalite.protocol.api import CLIENT_VERSION_CAPS
from kafkalite.protocol.errors import (
    SaslAuthenticationFailedError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkalite.protocol.exchange import RequestExchange
from kafkalite.protocol.sasl_client import ReauthSchedule
from kafkalite.protocol.scram import ScramError

__all__ = ["BrokerConnection", "ConnectionState", "Response", "pick_version"]

log = logging.getLogger(__name__)

Response = dict[str, Any]
_RECV_BYTES = 256 * 1024
_SOFTWARE_NAME = "kafkalite"
_SOFTWARE_VERSION = "0.1.0"
_AWAITED = {ConnectionState.NEGOTIATING: "ApiVersions",
            ConnectionState.AUTHENTICATING: "SASL authentication"}
"""What a connection still setting up waits for, for its timeout's message."""


class _Queued(NamedTuple):
    """A request sent before the connection was READY: encoded once versions are known."""

    api_key: int
    body: Mapping[str, Any]
    future: Future[Response]
    expect_response: bool


def pick_version(api_key: int, broker_range: tuple[int, int] | None) -> int:
    """The highest version in our range and the broker's; a typed error if they are disjoint."""
    ours = SUPPORTED_VERSIONS.get(ApiKey(api_key))
    if ours is None or broker_range is None:
        raise IncompatibleBrokerVersionError(f"the broker does not support api key {api_key}")
    cap = CLIENT_VERSION_CAPS.get(ApiKey(api_key), ours[1])
    low, high = max(ours[0], broker_range[0]), min(ours[1], cap, broker_range[1])
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
        self.address = address_of(host, port)
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self._versions: dict[int, int] = {}
        self._clock = clock
        self._sock: socket.socket | None = None
        self._socket_options = tuple(socket_options)
        self.request_counts: Counter[int] = Counter() if request_counts is None \
            else request_counts
        """Requests sent, by api key (shared with the client, for ``metrics()``)."""
        self.last_activity = clock()
        """When a request was last sent or a response last received (for idle closing)."""
        self._selector = selector
        self._events = 0
        self._exchange = RequestExchange(client_id, max_frame_bytes)
        self._received: memoryview | None = None
        """Where ``recv_into`` lands bytes while a socket is open: ``recv(256 KiB)`` would
        allocate (and, past malloc's mmap threshold, map and unmap) 256 KiB for every
        read, even a 60-byte produce response; that cost 15 µs a response."""
        self._answered = False
        """Whether the broker has sent anything on this socket (for the close's message)."""
        self._out = bytearray()
        self._written = 0
        self._queued_bytes = 0
        self._on_written: deque[tuple[int, Future[Response]]] = deque()
        self._waiting: list[_Queued] = []
        self._connect_deadline = 0.0
        self._security = security
        self._tls_context = None if security is None else security.ssl_context
        self._setup = ConnectionSetup(tls=self._tls_context is not None,
                                      sasl=security is not None and security.sasl is not None)
        self._sasl: SaslExchange | None = None
        self._reauth = ReauthSchedule()
        self._reauthenticating = False
        """A re-authentication is due or under way: new requests wait in ``_waiting``."""
        self.last_error: BaseException | None = None
        """Why the connection last closed (None: closed on purpose)."""
        self.on_state_change: Callable[[BrokerConnection], None] | None = None
        self.on_output: Callable[[BrokerConnection], None] | None = None
        """If set, a queued request is not written at once: this is called instead, and the
        owner calls :meth:`flush_output` later, so that requests queued together leave in
        one ``send`` (each socket call hands the GIL to the application's threads)."""

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.address} {self.state.value}>"

    @property
    def state(self) -> ConnectionState:
        return self._setup.state

    @property
    def setup_failed(self) -> bool:
        """The last close came before the connection was ever READY."""
        return self._setup.setup_failed

    def _handle(self, event: Event) -> None:
        """Take ``event``; the owner hears of a change of state."""
        before = self._setup.state
        if self._setup.handle(event) is not before:
            self._notify()

    def _notify(self) -> None:
        if self.on_state_change is not None:
            self.on_state_change(self)

    # -- socket lifecycle ------------------------------------------------------------------

    def connect(self) -> None:
        """Start a non-blocking connect; progress arrives through :meth:`handle_write`."""
        if self.state is not ConnectionState.DISCONNECTED:
            return
        self.last_activity = self._clock()
        self._connect_deadline = self.last_activity + self.request_timeout
        self._answered = False
        self._handle(Event.CONNECT)
        try:
            infos = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)
        except OSError as exc:
            self.close(connection_error(describe_resolve_error(self.host, self.port, exc), exc))
            return
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        self._sock = sock
        self._received = memoryview(bytearray(_RECV_BYTES))
        self._events = selectors.EVENT_READ | selectors.EVENT_WRITE
        self._selector.register(sock, self._events, self)
        try:
            for level, option, value in self._socket_options:
                sock.setsockopt(level, option, value)
        except OSError as exc:
            self.close(connection_error(f"socket_options for {self.address}: {exc}", exc))
            return
        code = sock.connect_ex(address)
        if code not in (0, errno_codes.EINPROGRESS, errno_codes.EWOULDBLOCK):
            self.close(connection_error(describe_connect_error(self.address, code)))

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
        return self._exchange.in_flight

    def close(self, error: BaseException | None = None) -> None:
        """Close the socket and fail every pending request with ``error``."""
        if self._sock is not None:
            self._selector.unregister(self._sock)
            self._sock.close()
            self._sock = None
        self._received = None
        self._out.clear()
        self._versions.clear()
        self._sasl = None
        self._reauth.cancel()
        self._reauthenticating = False
        self.last_error = error
        if self.state is not ConnectionState.DISCONNECTED:
            log.debug("closing %r: %s", self, error)
        pending = [future for future in self._exchange.abandon() if future is not None]
        pending += [queued.future for queued in self._waiting]
        pending += [future for _, future in self._on_written]
        self._waiting.clear()
        self._on_written.clear()
        # The futures fail in the new state (their callbacks see a closed connection), and
        # the owner hears of the close after them, as it always has.
        was = self.state
        self._setup.handle(Event.CLOSED)
        failure = error or KafkaConnectionError(f"connection to {self.address} closed")
        for future in pending:
            if not future.is_done():
                future.failure(failure)
        if was is not ConnectionState.DISCONNECTED:
            self._notify()

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
        if self.state is ConnectionState.READY and not self._reauthenticating:
            self._send_now(api_key, body, future, expect_response)
        elif self.state is ConnectionState.DISCONNECTED:
            future.failure(KafkaConnectionError(f"not connected to {self.address}" + (
                f" ({self.last_error})" if self.last_error is not None else "")))
        else:
            self._waiting.append(_Queued(api_key, body, future, expect_response))
        return future

    def _send_now(self, api_key: int, body: Mapping[str, Any], future: Future[Response],
                  expect_response: bool, version: int | None = None) -> None:
        now = self._clock()
        try:
            if version is None:
                version = self.api_version(api_key)
            frame = self._exchange.request(api_key, version, body, context=future,
                                           deadline=now + self.request_timeout,
                                           expect_response=expect_response)
        except Exception as exc:  # a bad body fails its own request, not the connection
            future.failure(exc)
            return
        self._out += frame
        self._queued_bytes += len(frame)
        self.last_activity = now
        self.request_counts[api_key] += 1
        if not expect_response:
            self._on_written.append((self._queued_bytes, future))
        if self.on_output is None:
            self._flush()
        else:
            self.on_output(self)

    def flush_output(self) -> None:
        """Write what :meth:`send` queued (see :attr:`on_output`); the selector finishes
        what the socket does not take now."""
        self._flush()

    # -- I/O events ------------------------------------------------------------------------

    def handle_write(self) -> None:
        if self.state is ConnectionState.CONNECTING:
            assert self._sock is not None
            code = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self.close(connection_error(describe_connect_error(self.address, code)))
                return
            self._handle(Event.TCP_CONNECTED)
            if self.state is ConnectionState.HANDSHAKING:
                self._start_tls()
                return
            self._update_interest()
            self._start_negotiation(max(SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]))
            return
        if self.state is ConnectionState.HANDSHAKING:
            self._continue_tls()
            return
        self._flush()

    # -- TLS ---------------------------------------------------------------------------------

    def _start_tls(self) -> None:
        plain = self._sock
        assert plain is not None and self._tls_context is not None
        self._selector.unregister(plain)
        try:
            self._sock = self._tls_context.wrap_socket(plain, server_hostname=self.host,
                                                       do_handshake_on_connect=False)
        except (OSError, ValueError) as exc:
            self._sock = None
            plain.close()
            self.close(connection_error(describe_tls_error(self.address, exc), exc))
            return
        self._events = selectors.EVENT_READ | selectors.EVENT_WRITE
        self._selector.register(self._sock, self._events, self)
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
            self.close(connection_error(describe_tls_error(self.address, exc), exc))
            return
        self._handle(Event.TLS_ESTABLISHED)
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
            self.close(connection_error(
                f"connection to {self.address} lost while sending: {exc.strerror or exc}", exc))
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
                self.close(connection_error(
                    f"connection to {self.address} lost: {exc.strerror or exc}", exc))
                return
            if not count:
                self.close(connection_error(describe_close(
                    self.address, self.state, tls=self._tls_context is not None,
                    answered=self._answered)))
                return
            data = received[:count]
            if not self._answered:
                self._answered = True
                if self._tls_context is None and looks_like_tls(data):
                    self.close(connection_error(describe_tls_answer(self.address)))
                    return
            try:
                frames = self._exchange.frames(data)
            except ProtocolDecodeError as exc:
                self.close(connection_error(f"{self.address}: {exc}", exc))
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
        try:
            response = self._exchange.receive_frame(frame)
        except ProtocolDecodeError as exc:
            # The request stays in flight, so the close fails it too; callers can tell a
            # malformed answer from a lost connection by the cause.
            self.close(connection_error(f"{self.address}: undecodable response: {exc}", exc))
            return
        response.context.success(response.body)
        if self._reauthenticating:
            self._maybe_start_reauthentication()

    def check_timeouts(self) -> float | None:
        """Close the connection if a request or the connect is overdue, start a
        re-authentication that is due; the next deadline."""
        now = self._clock()
        if (self.state is ConnectionState.READY and not self._reauthenticating
                and self._reauth.due(now)):
            self._reauthenticating = True
            self._maybe_start_reauthentication()
        reauth_at = None if self._reauthenticating else self._reauth.due_at
        if self.state in (ConnectionState.CONNECTING, ConnectionState.HANDSHAKING):
            if now >= self._connect_deadline:
                step = "connecting to" if self.state is ConnectionState.CONNECTING \
                    else "the TLS handshake with"
                self.close(KafkaTimeoutError(
                    f"{step} {self.address} timed out after {self.request_timeout:g} s"))
                return None
            return self._connect_deadline
        deadline = self._exchange.next_deadline()
        if deadline is None:
            return reauth_at
        if now >= deadline:
            what = _AWAITED.get(self.state, "a request")
            self.close(KafkaTimeoutError(
                f"{self.address}: no response to {what} within {self.request_timeout:g} s"))
            return None
        return deadline if reauth_at is None else min(deadline, reauth_at)

    # -- ApiVersions negotiation -------------------------------------------------------------

    def _start_negotiation(self, version: int) -> None:
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
            self.close(error_for_code(error)(f"ApiVersions v{version} from {self.address}"))
            return
        self.broker_versions = ranges
        self._handle(Event.VERSIONS_AGREED)
        if self.state is ConnectionState.AUTHENTICATING:
            assert self._security is not None and self._security.sasl is not None
            self._start_sasl(self._security.sasl.exchange())
            return
        self._become_ready()

    def _become_ready(self) -> None:
        waiting, self._waiting = self._waiting, []
        for queued in waiting:
            self._send_now(queued.api_key, queued.body, queued.future, queued.expect_response)

    # -- SASL ------------------------------------------------------------------------------

    def _maybe_start_reauthentication(self) -> None:
        """KIP-368: log in again once the requests in flight are answered (new ones wait),
        so that the broker's answers never interleave with the SASL exchange."""
        if self._sasl is None and self._exchange.in_flight == 0:
            assert self._security is not None and self._security.sasl is not None
            log.debug("re-authenticating %r", self)
            self._start_sasl(self._security.sasl.exchange())

    def _start_sasl(self, exchange: SaslExchange) -> None:
        self._sasl = exchange
        future: Future[Response] = Future()
        try:
            version = self.api_version(ApiKey.SASL_HANDSHAKE)
            self.api_version(ApiKey.SASL_AUTHENTICATE)
            if version < 1:
                raise IncompatibleBrokerVersionError("SaslHandshake v1 is needed")
        except IncompatibleBrokerVersionError as exc:
            self.close(IncompatibleBrokerVersionError(
                f"{self.address} does not offer SASL (SaslHandshake v1 and "
                f"SaslAuthenticate): {exc}"))
            return
        self._send_now(ApiKey.SASL_HANDSHAKE, {"mechanism": exchange.credentials.mechanism},
                       future, True, version=version)
        future.add_callback(self._on_sasl_handshake)

    def _on_sasl_handshake(self, body: Response) -> None:
        assert self._sasl is not None
        if body["error_code"]:
            self.close(error_for_code(body["error_code"])(
                f"{self.address} refused SASL mechanism "
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
                f"{self.address}: {body['error_message'] or 'authentication failed'}"))
            return
        try:
            reply = exchange.next(bytes(body["auth_bytes"]))
        except ScramError as exc:
            self.close(SaslAuthenticationFailedError(f"{self.address}: {exc}"))
            return
        if reply is not None:
            self._send_sasl_token(reply)
            return
        self._sasl = None
        self._reauth.session_started(body.get("session_lifetime_ms", 0), self._clock())
        if self._reauthenticating:
            self._reauthenticating = False
        else:
            self._handle(Event.AUTHENTICATED)
        self._become_ready()
