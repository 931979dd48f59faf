"""The SASL state of one connection on a SASL listener, sans-IO.

Kafka's order: ApiVersions (optional), SaslHandshake naming a mechanism, then the
mechanism's tokens (in SaslAuthenticate requests after a v1 handshake, as bare size-prefixed
frames after a v0 one). Until the exchange succeeds, the connection may send nothing else.
A failed exchange ends the connection after its error response. All transitions are in
``_TRANSITIONS``; :data:`ALLOWED` says which requests each state accepts.

Re-authentication (KIP-368): a login gets a session lifetime, the shorter of the
mechanism's ``connections.max.reauth.ms`` (0: none) and, for OAUTHBEARER, what is left of
the token's lifetime. Once it has one, the client may log in again on the same connection
(a SaslHandshake, at most once a second, with the same mechanism and ending with the same
principal) and gets a new lifetime; a request other than SaslHandshake after the session
expired closes the connection, as Kafka does.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from enum import Enum

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kafkalite.protocol.sasl_oauthbearer import (
    ERROR_ACKNOWLEDGEMENT,
    OAuthBearerFormatError,
    error_challenge,
    parse_client_response,
)
from kafkalite.protocol.sasl_oauthbearer import MECHANISM as OAUTHBEARER
from kafkalite.protocol.sasl_plain import PlainError, parse_plain
from kafkalite.protocol.scram import MECHANISMS as SCRAM_MECHANISMS
from kafkalite.protocol.scram import ScramCredential, ScramError, ScramServer
from kafkalite_server.security.oauthbearer import OAuthBearerValidationError, OAuthBearerValidator

FAILED_MESSAGE = "Authentication failed: invalid credentials"
"""The same words for an unknown user and a wrong password (reveal nothing); SCRAM's own
failure for both reads the same (its ScramError says "invalid credentials")."""


class SaslState(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


ALLOWED: dict[SaslState, frozenset[int] | None] = {
    SaslState.HANDSHAKE: frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE}),
    SaslState.AUTHENTICATE: frozenset({ApiKey.SASL_AUTHENTICATE}),
    SaslState.AUTHENTICATED: None,
    SaslState.FAILED: frozenset(),
}
"""Requests each state accepts (None: every request)."""

MIN_REAUTH_INTERVAL_MS = 1000
"""Kafka lets a connection re-authenticate at most once a second."""

_TRANSITIONS: dict[tuple[SaslState, str], SaslState] = {
    (SaslState.AUTHENTICATED, "re-authentication begins"): SaslState.HANDSHAKE,
    (SaslState.HANDSHAKE, "mechanism chosen"): SaslState.AUTHENTICATE,
    (SaslState.HANDSHAKE, "mechanism refused"): SaslState.FAILED,
    (SaslState.AUTHENTICATE, "token accepted"): SaslState.AUTHENTICATE,
    (SaslState.AUTHENTICATE, "exchange complete"): SaslState.AUTHENTICATED,
    (SaslState.AUTHENTICATE, "token refused"): SaslState.FAILED,
}


class SaslAuthenticator:
    """``plain_password(user)`` and ``scram_credential(user, mechanism)`` look users up;
    ``scram_decoy(user, mechanism)`` is what SCRAM offers a user that does not exist;
    ``oauthbearer`` checks OAUTHBEARER tokens; ``max_reauth_ms`` is each mechanism's
    ``connections.max.reauth.ms`` (absent or 0: none); ``now_ms()`` is the wall clock."""

    def __init__(self, mechanisms: tuple[str, ...],
                 plain_password: Callable[[str], str | None],
                 scram_credential: Callable[[str, str], ScramCredential | None],
                 scram_decoy: Callable[[str, str], ScramCredential],
                 oauthbearer: OAuthBearerValidator | None = None,
                 now_ms: Callable[[], int] | None = None,
                 max_reauth_ms: Mapping[str, int] | None = None) -> None:
        self.mechanisms = mechanisms
        self._max_reauth_ms = max_reauth_ms or {}
        self.session_lifetime_ms = 0
        """What the last login's SaslAuthenticate v1+ answer tells the client (0: none)."""
        self.session_expiry_ms: int | None = None
        """When the session ends (epoch ms) unless the client re-authenticates."""
        self._previous: tuple[str, str | None] | None = None
        """(mechanism, user) of the session being re-authenticated."""
        self._reauth_started_ms: int | None = None
        self.reauthentications = 0
        """How many re-authentications of this connection succeeded."""
        self._plain_password = plain_password
        self._scram_credential = scram_credential
        self._scram_decoy = scram_decoy
        self._oauthbearer = oauthbearer
        self._now_ms = now_ms
        self._oauthbearer_refusal: str | None = None
        """The JSON error sent as a challenge, until the client acknowledges it."""
        self.state = SaslState.HANDSHAKE
        self.mechanism: str | None = None
        self.raw_tokens = False
        """True after a v0 handshake: tokens come as bare frames, not SaslAuthenticate."""
        self.user: str | None = None
        self._scram: ScramServer | None = None

    def _move(self, event: str) -> None:
        self.state = _TRANSITIONS[(self.state, event)]

    def allows(self, api_key: int) -> bool:
        allowed = ALLOWED[self.state]
        return allowed is None or api_key in allowed

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.AUTHENTICATED

    @property
    def failed(self) -> bool:
        return self.state is SaslState.FAILED

    def handshake(self, mechanism: str, version: int) -> None:
        """Choose the mechanism; UnsupportedSaslMechanismError (then the connection closes)
        for one not enabled on this listener. On an authenticated connection it begins a
        re-authentication, if the session has a lifetime (IllegalSaslStateError otherwise,
        and the connection stays as it was)."""
        if self.state is SaslState.AUTHENTICATED:
            self._begin_reauthentication()
        if self.state is not SaslState.HANDSHAKE:
            raise IllegalSaslStateError(f"SaslHandshake in state {self.state.value}")
        if self._previous is not None and mechanism != self._previous[0]:
            self._move("mechanism refused")
            raise UnsupportedSaslMechanismError(
                f"re-authentication must use {self._previous[0]}, not {mechanism!r}")
        if mechanism not in self.mechanisms:
            self._move("mechanism refused")
            raise UnsupportedSaslMechanismError(
                f"{mechanism!r} is not enabled; enabled: {', '.join(self.mechanisms)}")
        self.mechanism = mechanism
        self.raw_tokens = version == 0
        if mechanism in SCRAM_MECHANISMS:
            self._scram = ScramServer(
                mechanism, lambda user: self._scram_credential(user, mechanism),
                decoy=lambda user: self._scram_decoy(user, mechanism))
        self._move("mechanism chosen")

    def _begin_reauthentication(self) -> None:
        now = self._clock()
        if self.session_expiry_ms is None:
            raise IllegalSaslStateError(
                "re-authentication is off: the session has no lifetime "
                "(connections.max.reauth.ms is 0)")
        if (self._reauth_started_ms is not None
                and now - self._reauth_started_ms < MIN_REAUTH_INTERVAL_MS):
            raise IllegalSaslStateError("re-authentication at most once a second")
        self._reauth_started_ms = now
        assert self.mechanism is not None
        self._previous = (self.mechanism, self.user)
        self._scram = None
        self._move("re-authentication begins")

    def session_expired(self, api_key: int) -> bool:
        """Does ``api_key``, arriving now, find the session over? A SaslHandshake never
        does: it re-authenticates."""
        return (self.state is SaslState.AUTHENTICATED and self.session_expiry_ms is not None
                and api_key != ApiKey.SASL_HANDSHAKE and self._clock() >= self.session_expiry_ms)

    def _clock(self) -> int:
        assert self._now_ms is not None, "a clock is needed for OAUTHBEARER and re-authentication"
        return self._now_ms()

    def _complete(self, user: str, credential_expiry_ms: int | None = None) -> None:
        """The exchange succeeded for ``user``: refuse a change of principal on
        re-authentication, then start the session's lifetime (Kafka's rule: the shorter of
        connections.max.reauth.ms and the credential's remaining life, when either is set)."""
        if self._previous is not None and user != self._previous[1]:
            self._move("token refused")
            raise SaslAuthenticationFailedError(
                f"Authentication failed: cannot change principals during re-authentication "
                f"from User:{self._previous[1]} to User:{user}")
        if self._previous is not None:
            self.reauthentications += 1
            self._previous = None
        self.user = user
        assert self.mechanism is not None
        max_reauth = self._max_reauth_ms.get(self.mechanism, 0)
        lifetimes = [max_reauth] if max_reauth > 0 else []
        if credential_expiry_ms is not None or lifetimes:
            now = self._clock()
            if credential_expiry_ms is not None:
                lifetimes.append(credential_expiry_ms - now)
            self.session_lifetime_ms = max(0, min(lifetimes))
            self.session_expiry_ms = now + self.session_lifetime_ms
        self._move("exchange complete")

    def authenticate(self, token: bytes) -> bytes:
        """The reply token; SaslAuthenticationFailedError (then the connection closes) for
        bad credentials or a malformed token."""
        if self.state is not SaslState.AUTHENTICATE:
            raise IllegalSaslStateError(f"SaslAuthenticate in state {self.state.value}")
        if self.mechanism == OAUTHBEARER:
            return self._oauthbearer_token(bytes(token))
        try:
            if self._scram is not None:
                reply = self._scram.receive(bytes(token))
                if self._scram.complete:
                    assert self._scram.user is not None
                    self._complete(self._scram.user)
                else:
                    self._move("token accepted")
                return reply
            user, password = parse_plain(bytes(token))
        except (ScramError, PlainError) as exc:
            self._move("token refused")
            raise SaslAuthenticationFailedError(f"Authentication failed: {exc}") from None
        expected = self._plain_password(user)
        if expected is None or not _same(expected, password):
            self._move("token refused")
            raise SaslAuthenticationFailedError(FAILED_MESSAGE)
        self._complete(user)
        return b""

    def _oauthbearer_token(self, token: bytes) -> bytes:
        """A valid token completes the exchange; an invalid one is answered with Kafka's
        JSON error as a challenge, and the client's acknowledgement of it ends in failure."""
        if self._oauthbearer_refusal is not None:
            refusal, self._oauthbearer_refusal = self._oauthbearer_refusal, None
            self._move("token refused")
            if token != ERROR_ACKNOWLEDGEMENT:
                refusal = "the client answered the token's refusal with another token"
            raise SaslAuthenticationFailedError(f"Authentication failed: {refusal}")
        assert self._oauthbearer is not None and self._now_ms is not None
        try:
            response = parse_client_response(token)
        except OAuthBearerFormatError as exc:
            self._move("token refused")
            raise SaslAuthenticationFailedError(f"Authentication failed: {exc}") from None
        try:
            validated = self._oauthbearer.validate(response.token, self._now_ms())
            if response.authzid not in (None, validated.principal_name):
                raise OAuthBearerValidationError(
                    f"the authorization id {response.authzid!r} is not the token's principal")
        except OAuthBearerValidationError as exc:
            challenge = error_challenge(exc.status, exc.scope)
            self._oauthbearer_refusal = f"{challenge.decode()}: {exc}"
            self._move("token accepted")
            return challenge
        self._complete(validated.principal_name, validated.lifetime_ms)
        return b""


def _same(left: str, right: str) -> bool:
    return hmac.compare_digest(left.encode("utf-8"), right.encode("utf-8"))
