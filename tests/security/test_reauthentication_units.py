"""KIP-368 re-authentication in the SASL state machine, with a clock the test moves: the
session lifetime, expiry, re-authentication on the same connection, and what it refuses;
and the client side: when it re-authenticates, and its OAUTHBEARER exchange."""

from __future__ import annotations

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kafkalite.protocol.sasl_client import ReauthSchedule, SaslCredentials, oauth_provider_error
from kafkalite.protocol.sasl_oauthbearer import client_response, unsecured_token
from kafkalite.protocol.sasl_plain import plain_message
from kafkalite_server.security.authenticator import SaslAuthenticator
from kafkalite_server.security.oauthbearer import UnsecuredValidator

START_MS = 1_700_000_000_000
USERS = {"alice": "alice-pw", "bob": "bob-pw"}


class Clock:
    def __init__(self) -> None:
        self.ms = START_MS

    def __call__(self) -> int:
        return self.ms


def no_scram(*_args: str) -> None:
    return None


def authenticator(clock: Clock, max_reauth_ms: int = 5000) -> SaslAuthenticator:
    return SaslAuthenticator(("PLAIN", "OAUTHBEARER"), USERS.get, no_scram,
                             no_scram,  # type: ignore[arg-type]
                             UnsecuredValidator({}), clock,
                             {"PLAIN": max_reauth_ms, "OAUTHBEARER": max_reauth_ms})


def login(sasl: SaslAuthenticator, user: str = "alice", mechanism: str = "PLAIN") -> bytes:
    sasl.handshake(mechanism, 1)
    if mechanism == "OAUTHBEARER":
        return sasl.authenticate(client_response(token_for(user, 60)))
    return sasl.authenticate(plain_message(user, USERS[user]))


def token_for(user: str, lifetime_s: int) -> str:
    return unsecured_token({"sub": user, "exp": START_MS // 1000 + lifetime_s})


def test_a_session_expires_after_connections_max_reauth_ms_except_for_a_handshake() -> None:
    clock = Clock()
    sasl = authenticator(clock)
    login(sasl)
    assert (sasl.session_lifetime_ms, sasl.session_expiry_ms) == (5000, START_MS + 5000)
    clock.ms += 4999
    assert not sasl.session_expired(ApiKey.METADATA)
    clock.ms += 1
    assert sasl.session_expired(ApiKey.METADATA)
    assert not sasl.session_expired(ApiKey.SASL_HANDSHAKE)


def test_re_authentication_renews_the_lifetime_even_after_expiry() -> None:
    clock = Clock()
    sasl = authenticator(clock)
    login(sasl)
    clock.ms += 6000
    login(sasl)
    assert sasl.authenticated and sasl.reauthentications == 1
    assert sasl.session_expiry_ms == clock.ms + 5000
    assert not sasl.session_expired(ApiKey.PRODUCE)


def test_during_re_authentication_only_the_sasl_requests_are_served() -> None:
    clock = Clock()
    sasl = authenticator(clock)
    login(sasl)
    clock.ms += 2000
    sasl.handshake("PLAIN", 1)
    assert not sasl.allows(ApiKey.PRODUCE) and sasl.allows(ApiKey.SASL_AUTHENTICATE)


def test_re_authenticating_as_another_principal_fails_the_connection() -> None:
    clock = Clock()
    sasl = authenticator(clock)
    login(sasl)
    clock.ms += 2000
    with pytest.raises(SaslAuthenticationFailedError,
                       match=r"cannot change principals .* from User:alice to User:bob"):
        login(sasl, "bob")
    assert sasl.failed


def test_re_authenticating_with_another_mechanism_is_refused() -> None:
    clock = Clock()
    sasl = authenticator(clock)
    login(sasl)
    clock.ms += 2000
    with pytest.raises(UnsupportedSaslMechanismError, match="must use PLAIN"):
        sasl.handshake("OAUTHBEARER", 1)
    assert sasl.failed


def test_re_authentication_is_refused_within_a_second_and_without_a_lifetime() -> None:
    clock = Clock()
    sasl = authenticator(clock)
    login(sasl)
    clock.ms += 1500
    login(sasl)
    clock.ms += 999
    with pytest.raises(IllegalSaslStateError, match="once a second"):
        sasl.handshake("PLAIN", 1)
    assert sasl.authenticated  # the session goes on
    unlimited = authenticator(clock, max_reauth_ms=0)
    login(unlimited)
    assert (unlimited.session_lifetime_ms, unlimited.session_expiry_ms) == (0, None)
    clock.ms += 10**9
    assert not unlimited.session_expired(ApiKey.METADATA)
    with pytest.raises(IllegalSaslStateError, match="re-authentication is off"):
        unlimited.handshake("PLAIN", 1)
    assert unlimited.authenticated


@pytest.mark.parametrize("max_reauth_ms, lifetime_ms", [(5000, 5000), (0, 60_000),
                                                       (120_000, 60_000)])
def test_an_oauthbearer_session_ends_with_its_token_at_the_latest(
        max_reauth_ms: int, lifetime_ms: int) -> None:
    sasl = authenticator(Clock(), max_reauth_ms)
    assert login(sasl, mechanism="OAUTHBEARER") == b""
    assert sasl.session_lifetime_ms == lifetime_ms


def test_a_client_re_authenticates_at_85_to_95_percent_of_its_session() -> None:
    early, late = ReauthSchedule(lambda: 0.0), ReauthSchedule(lambda: 1.0)
    early.session_started(10_000, now=100.0)
    late.session_started(10_000, now=100.0)
    assert (early.due_at, late.due_at) == (pytest.approx(108.5), pytest.approx(109.5))
    assert not early.due(108.4) and early.due(108.5)
    short = ReauthSchedule(lambda: 0.0)
    short.session_started(200, now=0.0)  # under a second counts as one
    assert short.due_at == pytest.approx(0.85)
    short.session_started(0, now=0.0)
    assert short.due_at is None and not short.due(10**9)


class Provider:
    def token(self) -> str:
        return "tok"

    def extensions(self) -> dict[str, str]:
        return {"traceId": "t1"}


def test_the_client_side_oauthbearer_exchange_acknowledges_a_refusal() -> None:
    exchange = SaslCredentials("OAUTHBEARER", token_provider=Provider()).exchange()
    assert exchange.first() == b"n,,\x01auth=Bearer tok\x01traceId=t1\x01\x01"
    assert exchange.next(b'{"status":"invalid_token"}') == b"\x01"
    assert not exchange.complete
    accepted = SaslCredentials("OAUTHBEARER", token_provider=Provider()).exchange()
    accepted.first()
    assert accepted.next(b"") is None and accepted.complete


def test_a_token_provider_is_checked_for_shape() -> None:
    assert oauth_provider_error(Provider()) is None
    assert "token()" in str(oauth_provider_error(object()))
