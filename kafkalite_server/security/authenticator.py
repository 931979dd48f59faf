"""The SASL state of one connection on a SASL listener, sans-IO.

Kafka's order: ApiVersions (optional), SaslHandshake naming a mechanism, then the
mechanism's tokens (in SaslAuthenticate requests after a v1 handshake, as bare size-prefixed
frames after a v0 one). Until the exchange succeeds, the connection may send nothing else.
A failed exchange ends the connection after its error response. All transitions are in
``_TRANSITIONS``; :data:`ALLOWED` says which requests each state accepts.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
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

_TRANSITIONS: dict[tuple[SaslState, str], SaslState] = {
    (SaslState.HANDSHAKE, "mechanism chosen"): SaslState.AUTHENTICATE,
    (SaslState.HANDSHAKE, "mechanism refused"): SaslState.FAILED,
    (SaslState.AUTHENTICATE, "token accepted"): SaslState.AUTHENTICATE,
    (SaslState.AUTHENTICATE, "exchange complete"): SaslState.AUTHENTICATED,
    (SaslState.AUTHENTICATE, "token refused"): SaslState.FAILED,
}


class SaslAuthenticator:
    """``plain_password(user)`` and ``scram_credential(user, mechanism)`` look users up;
    ``scram_decoy(user, mechanism)`` is what SCRAM offers a user that does not exist;
    ``oauthbearer`` checks OAUTHBEARER tokens at ``now_ms()``."""

    def __init__(self, mechanisms: tuple[str, ...],
                 plain_password: Callable[[str], str | None],
                 scram_credential: Callable[[str, str], ScramCredential | None],
                 scram_decoy: Callable[[str, str], ScramCredential],
                 oauthbearer: OAuthBearerValidator | None = None,
                 now_ms: Callable[[], int] | None = None) -> None:
        self.mechanisms = mechanisms
        self._plain_password = plain_password
        self._scram_credential = scram_credential
        self._scram_decoy = scram_decoy
        self._oauthbearer = oauthbearer
        self._now_ms = now_ms
        self._oauthbearer_refusal: str | None = None
        """The JSON error sent as a challenge, until the client acknowledges it."""
        self.token_lifetime_ms: int | None = None
        """When the OAUTHBEARER token of the exchange expires (epoch ms)."""
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
        for one not enabled on this listener."""
        if self.state is not SaslState.HANDSHAKE:
            raise IllegalSaslStateError(f"SaslHandshake in state {self.state.value}")
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
                    self.user = self._scram.user
                    self._move("exchange complete")
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
        self.user = user
        self._move("exchange complete")
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
        self.user = validated.principal_name
        self.token_lifetime_ms = validated.lifetime_ms
        self._move("exchange complete")
        return b""


def _same(left: str, right: str) -> bool:
    return hmac.compare_digest(left.encode("utf-8"), right.encode("utf-8"))
