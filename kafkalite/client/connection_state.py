"""The states of a client connection and the one table of their transitions (pure, no I/O).

A connection is set up in steps: the TCP connect, a TLS handshake (SSL, SASL_SSL), the
ApiVersions negotiation, SASL authentication (SASL_PLAINTEXT, SASL_SSL); then it is READY.
Each step's success is one :class:`Event`; a failure at any step, or a close, is
:attr:`Event.CLOSED`. :data:`TRANSITIONS` says where each event leads from each state; the
steps a connection's security settings leave out are skipped (:class:`ConnectionSetup`).
Anything else is a bug in the driver and raises :class:`IllegalTransition`.

The state a connection was in when it closed tells a person what went wrong: a close while
HANDSHAKING is a TLS problem, one while NEGOTIATING before any answer usually a plaintext
client on a TLS listener (see :mod:`kafkalite.client.failures`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class ConnectionState(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    HANDSHAKING = "handshaking"
    NEGOTIATING = "negotiating"
    AUTHENTICATING = "authenticating"
    READY = "ready"


class Event(enum.Enum):
    CONNECT = "connect"
    """The driver starts a TCP connect."""
    TCP_CONNECTED = "tcp connected"
    TLS_ESTABLISHED = "tls established"
    VERSIONS_AGREED = "versions agreed"
    AUTHENTICATED = "authenticated"
    CLOSED = "closed"
    """A step failed, the peer closed, a request timed out, or the owner closed it."""


class IllegalTransition(RuntimeError):
    """An event that cannot happen in the connection's state: a bug in its driver."""


_State = ConnectionState
TRANSITIONS: Mapping[ConnectionState, Mapping[Event, tuple[ConnectionState, ...]]] = {
    _State.DISCONNECTED: {Event.CONNECT: (_State.CONNECTING,),
                          Event.CLOSED: (_State.DISCONNECTED,)},
    _State.CONNECTING: {Event.TCP_CONNECTED: (_State.HANDSHAKING, _State.NEGOTIATING),
                        Event.CLOSED: (_State.DISCONNECTED,)},
    _State.HANDSHAKING: {Event.TLS_ESTABLISHED: (_State.NEGOTIATING,),
                         Event.CLOSED: (_State.DISCONNECTED,)},
    _State.NEGOTIATING: {Event.VERSIONS_AGREED: (_State.AUTHENTICATING, _State.READY),
                         Event.CLOSED: (_State.DISCONNECTED,)},
    _State.AUTHENTICATING: {Event.AUTHENTICATED: (_State.READY,),
                            Event.CLOSED: (_State.DISCONNECTED,)},
    _State.READY: {Event.CLOSED: (_State.DISCONNECTED,)},
}
"""For each state and event, the next state: the first of the candidates that the
connection's setup does not skip."""

class ConnectionSetup:
    """One connection's state, moved only through :data:`TRANSITIONS`.

    ``tls`` and ``sasl`` say which optional steps this connection takes. After a close,
    :attr:`closed_from` is the state it left: READY for a working connection that broke,
    an earlier state for a setup that failed.
    """

    def __init__(self, *, tls: bool, sasl: bool) -> None:
        self.state = _State.DISCONNECTED
        self.closed_from: ConnectionState | None = None
        self._skipped = frozenset(
            ({_State.HANDSHAKING} if not tls else set())
            | ({_State.AUTHENTICATING} if not sasl else set()))

    def handle(self, event: Event) -> ConnectionState:
        """Take ``event``; the new state (raises IllegalTransition if it cannot happen)."""
        candidates = TRANSITIONS[self.state].get(event)
        if candidates is None:
            raise IllegalTransition(f"{event.value!r} cannot happen while {self.state.value}")
        following = next(state for state in candidates if state not in self._skipped)
        if event is Event.CLOSED and self.state is not _State.DISCONNECTED:
            self.closed_from = self.state
        self.state = following
        return following

    @property
    def setup_failed(self) -> bool:
        """The last close came before the connection was ever READY."""
        return self.closed_from is not None and self.closed_from is not _State.READY
