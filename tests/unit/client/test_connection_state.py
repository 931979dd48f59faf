"""The connection state table: each security setup's path to READY, closes from anywhere,
and events that cannot happen refused."""

from __future__ import annotations

import pytest

from kafkalite.client.connection_state import (
    TRANSITIONS,
    ConnectionSetup,
    ConnectionState,
    Event,
    IllegalTransition,
)

S = ConnectionState
SETUP_EVENTS = (Event.CONNECT, Event.TCP_CONNECTED, Event.TLS_ESTABLISHED,
                Event.VERSIONS_AGREED, Event.AUTHENTICATED)


def walk(setup: ConnectionSetup, *events: Event) -> list[ConnectionState]:
    return [setup.handle(event) for event in events]


@pytest.mark.parametrize("tls, sasl, path", [
    (False, False, [S.CONNECTING, S.NEGOTIATING, S.READY]),
    (True, False, [S.CONNECTING, S.HANDSHAKING, S.NEGOTIATING, S.READY]),
    (False, True, [S.CONNECTING, S.NEGOTIATING, S.AUTHENTICATING, S.READY]),
    (True, True, [S.CONNECTING, S.HANDSHAKING, S.NEGOTIATING, S.AUTHENTICATING, S.READY]),
])
def test_each_security_setup_takes_only_its_own_steps(
        tls: bool, sasl: bool, path: list[ConnectionState]) -> None:
    setup = ConnectionSetup(tls=tls, sasl=sasl)
    events = [Event.CONNECT, Event.TCP_CONNECTED]
    events += [Event.TLS_ESTABLISHED] if tls else []
    events += [Event.VERSIONS_AGREED]
    events += [Event.AUTHENTICATED] if sasl else []
    assert walk(setup, *events) == path
    assert not setup.setup_failed


@pytest.mark.parametrize("steps", range(1, 5))
def test_a_close_during_setup_is_a_failed_setup_from_that_state(steps: int) -> None:
    setup = ConnectionSetup(tls=True, sasl=True)
    reached = walk(setup, *SETUP_EVENTS[:steps])[-1]
    assert setup.handle(Event.CLOSED) is S.DISCONNECTED
    assert setup.closed_from is reached
    assert setup.setup_failed


def test_a_ready_connection_that_closes_did_not_fail_its_setup() -> None:
    setup = ConnectionSetup(tls=False, sasl=False)
    walk(setup, Event.CONNECT, Event.TCP_CONNECTED, Event.VERSIONS_AGREED)
    setup.handle(Event.CLOSED)
    assert (setup.state, setup.closed_from, setup.setup_failed) == (
        S.DISCONNECTED, S.READY, False)


def test_closing_a_closed_connection_changes_nothing() -> None:
    setup = ConnectionSetup(tls=False, sasl=False)
    walk(setup, Event.CONNECT, Event.CLOSED)
    assert setup.handle(Event.CLOSED) is S.DISCONNECTED
    assert setup.closed_from is S.CONNECTING  # the close that mattered


@pytest.mark.parametrize("state", list(S))
def test_every_state_can_close_and_nothing_else_is_allowed_twice(
        state: ConnectionState) -> None:
    assert TRANSITIONS[state][Event.CLOSED] == (S.DISCONNECTED,)


@pytest.mark.parametrize("events", [
    (Event.TCP_CONNECTED,),  # no connect started
    (Event.CONNECT, Event.CONNECT),
    (Event.CONNECT, Event.VERSIONS_AGREED),  # before the socket connected
    (Event.CONNECT, Event.TCP_CONNECTED, Event.AUTHENTICATED),  # before negotiation
])
def test_events_that_cannot_happen_are_refused(events: tuple[Event, ...]) -> None:
    setup = ConnectionSetup(tls=False, sasl=True)
    with pytest.raises(IllegalTransition):
        walk(setup, *events)


def test_tls_established_without_tls_is_refused() -> None:
    setup = ConnectionSetup(tls=False, sasl=False)
    walk(setup, Event.CONNECT, Event.TCP_CONNECTED)
    with pytest.raises(IllegalTransition, match="tls established"):
        setup.handle(Event.TLS_ESTABLISHED)
