"""The client side of a SASL exchange, sans-IO: PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER
tokens for SaslAuthenticate, and when to re-authenticate (KIP-368). The SDK's connections
and the broker's own connections to other brokers move the tokens; this module only makes
and checks them."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kafkalite.protocol.sasl_oauthbearer import ERROR_ACKNOWLEDGEMENT, client_response
from kafkalite.protocol.sasl_oauthbearer import MECHANISM as OAUTHBEARER
from kafkalite.protocol.sasl_plain import plain_message
from kafkalite.protocol.scram import MECHANISMS as SCRAM_MECHANISMS
from kafkalite.protocol.scram import ScramClient

SASL_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, OAUTHBEARER)


@runtime_checkable
class TokenProvider(Protocol):
    """kafka-python's ``sasl_oauth_token_provider``: ``token()`` returns the bearer token
    (asked at every login, so it may refresh it); an optional ``extensions()`` returns the
    SASL extensions to send with it."""

    def token(self) -> str: ...


@dataclass(frozen=True)
class SaslCredentials:
    mechanism: str
    username: str = ""
    password: str = ""
    token_provider: TokenProvider | None = None
    """For OAUTHBEARER, instead of a user name and password."""

    def exchange(self) -> SaslExchange:
        return SaslExchange(self)


class SaslExchange:
    """One client-side SASL exchange: :meth:`first` then :meth:`next` with each server
    token until :attr:`complete` (sans-IO; the connection moves the tokens)."""

    def __init__(self, credentials: SaslCredentials) -> None:
        self.credentials = credentials
        self._scram = (ScramClient(credentials.mechanism, credentials.username,
                                   credentials.password)
                       if credentials.mechanism in SCRAM_MECHANISMS else None)
        self.complete = False

    def first(self) -> bytes:
        if self.credentials.mechanism == OAUTHBEARER:
            provider = self.credentials.token_provider
            assert provider is not None
            extensions: Callable[[], Mapping[str, str]] | None = getattr(
                provider, "extensions", None)
            return client_response(provider.token(),
                                   extensions() if extensions is not None else None)
        if self._scram is None:
            return plain_message(self.credentials.username, self.credentials.password)
        return self._scram.first_message()

    def next(self, token: bytes) -> bytes | None:
        """The reply to a server token, or None when the exchange is over (ScramError if
        the server's answer does not check out). An OAUTHBEARER server that refuses the
        token answers a JSON error: it is acknowledged, and the broker then fails the
        exchange with SASL_AUTHENTICATION_FAILED."""
        if self.credentials.mechanism == OAUTHBEARER and token:
            return ERROR_ACKNOWLEDGEMENT
        if self._scram is None:
            self.complete = True
            return None
        reply = self._scram.receive(token)
        self.complete = self._scram.complete
        return reply


MIN_SESSION_LIFETIME_MS = 1000
REAUTH_WINDOW = (0.85, 0.95)
"""Where in the session lifetime a client re-authenticates: at a random point of this
window, so that many connections opened together do not all re-authenticate at once."""


class ReauthSchedule:
    """When a connection re-authenticates (KIP-368, the client side, as kafka-python 3
    does it): after each login, at 85-95% of the session lifetime the broker gave in
    SaslAuthenticate (a lifetime under a second counts as one second; 0 means never)."""

    def __init__(self, rng: Callable[[], float] = random.random) -> None:
        self._rng = rng
        self.due_at: float | None = None
        """Monotonic seconds; None: no re-authentication scheduled."""

    def session_started(self, lifetime_ms: int, now: float) -> None:
        if lifetime_ms <= 0:
            self.due_at = None
            return
        low, high = REAUTH_WINDOW
        share = low + (high - low) * self._rng()
        self.due_at = now + max(lifetime_ms, MIN_SESSION_LIFETIME_MS) * share / 1000

    def due(self, now: float) -> bool:
        return self.due_at is not None and now >= self.due_at

    def cancel(self) -> None:
        self.due_at = None


def oauth_provider_error(provider: Any) -> str | None:
    """Why ``provider`` cannot be a token provider, or None if it can."""
    if not isinstance(provider, TokenProvider):
        return "must be an object with a token() method returning the bearer token"
    extensions = getattr(provider, "extensions", None)
    if extensions is not None and not callable(extensions):
        return "extensions must be a method returning a dict of str to str"
    return None
