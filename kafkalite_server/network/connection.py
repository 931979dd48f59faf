"""One client connection: frames in, responses out, strictly one request at a time.

Handling one request at a time (awaiting delayed ones) is how Kafka mutes a channel: the
responses leave in request order however long each takes. Record chunks (file regions)
above ``SENDFILE_MIN_BYTES`` go out with ``loop.sendfile`` (zero copy); everything else
is joined into one ``transport.write``.

Limits (see ``docs/broker.md``): every connection is charged in the broker's
:class:`~kafkalite_server.network.request_budget.RequestBytesBudget`
(``queued.max.request.bytes``) and stops reading while its next request is not admitted; a
connection with no request in progress is closed after ``connections.max.idle.ms``, and one
whose request has not fully arrived ``kafkalite.request.receive.timeout.ms`` after its first
byte is closed too. Time stalled by the budget counts: a stalled client cannot be seen to
hang up (its bytes are not read), and by then it has given the request up anyway.

Each connection has a :class:`~kafkalite_server.network.session.Session` (its listener,
principal and SASL state). After a v0 SaslHandshake the SASL tokens arrive as bare frames
and are answered as bare frames; a failed exchange closes the connection after its reply.
A request other than SaslHandshake after the SASL session's lifetime ran out (KIP-368,
see :mod:`kafkalite_server.security.authenticator`) closes the connection unanswered.
A response that carries a client quota's throttle time mutes the connection for that
time (KIP-219): it reads and handles nothing more until then.
A failed exchange's reply (or, for bare tokens, the close) is held back
``connection.failed.authentication.delay.ms``, as Kafka does, so guessing passwords costs
the guesser time: only this connection's task waits, every other connection is served.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from kafkalite.protocol import ApiKey, FrameDecoder, FrameTooLargeError
from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.network.deferred_responses import DeferredResponses
from kafkalite_server.network.dispatch import Disconnect, dispatch
from kafkalite_server.network.listeners import Listener
from kafkalite_server.network.request_budget import NO_BOUND, RequestBytesBudget
from kafkalite_server.network.session import Session
from kafkalite_server.network.tls import certificate_principal

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker
    from kafkalite_server.config import BrokerConfig

log = logging.getLogger(__name__)

_READ_SIZE = 256 * 1024
SENDFILE_MIN_BYTES = 64 * 1024
"""Smaller record regions are read with one ``pread`` and sent with the response bytes:
below this size the syscalls and bookkeeping of ``loop.sendfile`` cost more than the copy."""


def _seconds(ms: int) -> float | None:
    return None if ms == NO_BOUND else ms / 1000


class ConnectionLimits:
    """A broker's request budget, the connections waiting on it, and the two timeouts."""

    def __init__(self, config: BrokerConfig) -> None:
        self.budget = RequestBytesBudget(config.queued_max_request_bytes)
        self.idle_timeout = _seconds(config.connections_max_idle_ms)
        self.receive_timeout = _seconds(config.kafkalite_request_receive_timeout_ms)
        self.failed_authentication_delay = \
            config.connection_failed_authentication_delay_ms / 1000
        self._waiters: set[asyncio.Future[None]] = set()

    def charge(self, holder: Hashable, nbytes: int) -> None:
        before = self.budget.total
        self.budget.charge(holder, nbytes)
        if self.budget.total < before:
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def admit(self, holder: Hashable, charge: int, frame_size: int) -> None:
        """Wait until ``holder`` may receive its frame, then charge it."""
        loop = asyncio.get_running_loop()
        while not self.budget.admits(holder, charge, frame_size):
            waiter = loop.create_future()
            self._waiters.add(waiter)
            try:
                await waiter
            finally:
                self._waiters.discard(waiter)
        self.budget.charge(holder, charge)


def open_session(broker: Broker, listener: Listener, writer: asyncio.StreamWriter) -> Session:
    peername = writer.get_extra_info("peername")
    session = Session(listener, peername[0] if peername else "?")
    principal = certificate_principal(writer.get_extra_info("ssl_object"))
    if principal is not None:
        session.principal = principal
    if listener.uses_sasl:
        session.authenticator = broker.security.authenticator(listener.name)
    return session


async def serve_connection(broker: Broker, listener: Listener, reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
    peername = writer.get_extra_info("peername")
    peer = f"{peername[0]}:{peername[1]}" if peername else "?"
    session = open_session(broker, listener, writer)
    limits: ConnectionLimits = broker.connection_limits
    decoder = FrameDecoder(broker.config.socket_request_max_bytes)
    holder = object()
    loop = asyncio.get_running_loop()
    admitted = False
    receive_deadline: float | None = None
    pending = 0
    """Bytes of the requests received and not yet dispatched."""

    def charge() -> None:
        """What this connection holds: requests in, unanswered Produces, the one arriving."""
        limits.charge(holder, pending + deferred.held + _receiving(decoder, admitted))

    deferred = DeferredResponses(writer, write_chunks, charge)
    try:
        while True:
            await wait_unmuted(session)
            size = decoder.next_frame_size
            if decoder.buffered:
                timeout = None if receive_deadline is None else receive_deadline - loop.time()
            else:
                timeout = limits.idle_timeout
            try:
                if size is not None and not admitted:
                    await asyncio.wait_for(limits.admit(holder, 4 + size, size), timeout)
                    admitted = True
                    continue
                data = await asyncio.wait_for(reader.read(_READ_SIZE), timeout)
            except TimeoutError:
                if decoder.buffered:
                    log.warning("closing connection from %s: a request was not received "
                                "within kafkalite.request.receive.timeout.ms (%d bytes of it "
                                "in)", peer, decoder.buffered)
                else:
                    log.info("closing connection from %s: idle for connections.max.idle.ms",
                             peer)
                return
            if not data:
                return
            if not decoder.buffered and limits.receive_timeout is not None:
                receive_deadline = loop.time() + limits.receive_timeout
            try:
                frames = deque(decoder.feed(data))
            except FrameTooLargeError as exc:
                log.warning("closing connection from %s: %s", peer, exc)
                return
            if frames:
                admitted = False
                if not decoder.buffered:
                    receive_deadline = None
                elif limits.receive_timeout is not None:
                    receive_deadline = loop.time() + limits.receive_timeout
            pending = sum(len(frame) for frame in frames)
            charge()
            while frames:
                await wait_unmuted(session)
                frame = frames.popleft()
                chunks: list[Any] | None
                if session.expired(int.from_bytes(frame[:2], "big")):
                    log.info("closing connection from %s on listener %s: its SASL session "
                             "expired without re-authentication", peer, listener.name)
                    return
                try:
                    if session.raw_tokens:
                        chunks = raw_token_reply(session, frame, peer)
                    elif int.from_bytes(frame[:2], "big") == ApiKey.PRODUCE:
                        chunks = await _produce(broker, frame, peer, session, deferred)
                    else:
                        await deferred.drained()
                        chunks = await dispatch(broker, frame, peer, session)
                except Disconnect:
                    await hold_back_failed_login(session, limits)
                    raise
                pending -= len(frame)
                del frame
                charge()
                await hold_back_failed_login(session, limits)
                if chunks is _DEFERRED:
                    await deferred.room()
                elif chunks is not None:
                    await write_chunks(writer, chunks)
                if session.close_reason is not None:
                    log.info("closing connection from %s on listener %s: %s", peer,
                             listener.name, session.close_reason)
                    return
    except Disconnect:
        return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    except Exception:
        log.exception("closing connection from %s after an unexpected error", peer)
    finally:
        deferred.close()
        limits.charge(holder, 0)
        writer.close()


_DEFERRED: list[Any] = []
"""A Produce's answer that :class:`DeferredResponses` writes once its ISR has it."""


async def _produce(broker: Broker, frame: bytearray, peer: str, session: Session,
                   deferred: DeferredResponses) -> list[Any] | None:
    """Dispatches a Produce and returns once its records are appended: its answer, or
    :data:`_DEFERRED` when it waits for the ISR (answered in order by ``deferred``)."""
    loop = asyncio.get_running_loop()
    appended: asyncio.Future[None] = loop.create_future()

    def on_appended() -> None:
        if not appended.done():
            appended.set_result(None)

    task = loop.create_task(dispatch(broker, frame, peer, session, on_appended))
    try:
        await asyncio.wait((task, appended), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    if task.done():
        await deferred.drained()
        return task.result()
    deferred.defer(task, len(frame))
    return _DEFERRED


async def wait_unmuted(session: Session) -> None:
    """A connection a client quota throttled reads and handles nothing until the throttle
    time ends (KIP-219); its response was sent at once."""
    delay = session.muted_until - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


async def hold_back_failed_login(session: Session, limits: ConnectionLimits) -> None:
    """After a failed SASL exchange, wait ``connection.failed.authentication.delay.ms``
    before the failure is answered and the connection closed."""
    if session.failed_authentication and limits.failed_authentication_delay > 0:
        await asyncio.sleep(limits.failed_authentication_delay)


def raw_token_reply(session: Session, frame: bytearray, peer: str) -> list[bytes]:
    """A bare SASL token in, a bare token out (Kafka's framing after SaslHandshake v0). A
    failure gets no reply a client could read: the connection just closes."""
    authenticator = session.authenticator
    assert authenticator is not None
    try:
        reply = authenticator.authenticate(bytes(frame))
    except BrokerResponseError as exc:
        log.info("closing connection from %s: %s", peer, exc)
        raise Disconnect(str(exc)) from None
    if authenticator.authenticated and authenticator.user is not None:
        session.authenticated_as(authenticator.user)
    return [len(reply).to_bytes(4, "big"), reply]


def _receiving(decoder: FrameDecoder, admitted: bool) -> int:
    """The charge for the request being received: all of it once admitted, else what is in."""
    size = decoder.next_frame_size
    return 4 + size if admitted and size is not None else decoder.buffered


async def write_chunks(writer: asyncio.StreamWriter, chunks: list[Any]) -> None:
    """Bytes and small regions leave in one write; large regions go zero-copy."""
    transport = writer.transport
    pending: list[bytes | bytearray | memoryview] = []
    for chunk in chunks:
        if isinstance(chunk, bytes | bytearray | memoryview):
            pending.append(chunk)
        elif len(chunk) <= SENDFILE_MIN_BYTES:
            pending.append(chunk.read_bytes())
        else:
            if pending:
                transport.write(b"".join(pending))
                pending = []
            await writer.drain()
            await _send_region(transport, chunk)
    if pending:
        transport.write(b"".join(pending))
    await writer.drain()


async def _send_region(transport: asyncio.WriteTransport, region: Any) -> None:
    """Zero-copy when the transport allows; otherwise the bytes via ``pread``. (asyncio's
    own fallback seeks the shared file object, which would race between connections.)"""
    loop = asyncio.get_running_loop()
    try:
        await loop.sendfile(transport, region.file, region.position, region.length,
                            fallback=False)
    except (RuntimeError, NotImplementedError, asyncio.SendfileNotAvailableError):
        if transport.is_closing():
            raise ConnectionResetError("connection closed during sendfile") from None
        transport.write(region.read_bytes())
