"""What the broker knows about one client connection: the listener it came in on, the
client's address, its principal, and (on a SASL listener) its SASL state.

The principal is ``User:ANONYMOUS`` on PLAINTEXT, the client certificate's subject on SSL
with ``ssl.client.auth`` requested or required (``User:ANONYMOUS`` without a certificate),
and ``User:<name>`` once SASL succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite_server.network.listeners import Listener
from kafkalite_server.security.authenticator import SaslAuthenticator
from kafkalite_server.security.broker_security import ANONYMOUS


@dataclass
class Session:
    listener: Listener
    client_host: str
    principal: str = ANONYMOUS
    authenticator: SaslAuthenticator | None = None
    close_reason: str | None = None
    """Set when the response being sent is the last (a failed SASL exchange): why."""
    muted_until: float = 0.0
    """``time.monotonic()`` before which the connection reads no request: a client quota's
    throttle (KIP-219)."""

    def mute_for(self, throttle_ms: int, now: float) -> None:
        self.muted_until = max(self.muted_until, now + throttle_ms / 1000)

    def allows(self, api_key: int) -> bool:
        """May this request be handled now? (Before SASL succeeds, only ApiVersions and the
        SASL requests are.)"""
        return self.authenticator is None or self.authenticator.allows(api_key)

    @property
    def raw_tokens(self) -> bool:
        """Is the next frame a bare SASL token (after a v0 SaslHandshake)?"""
        authenticator = self.authenticator
        return (authenticator is not None and authenticator.raw_tokens
                and not authenticator.authenticated and not authenticator.failed
                and authenticator.mechanism is not None)

    @property
    def failed_authentication(self) -> bool:
        """Did this connection's SASL exchange just fail (a refused mechanism, a malformed
        token, wrong credentials)? The connection closes after its answer."""
        return self.authenticator is not None and self.authenticator.failed

    @property
    def close_after_response(self) -> bool:
        return self.close_reason is not None

    def expired(self, api_key: int) -> bool:
        """Has the SASL session run out of its lifetime, so that this request (anything but
        a SaslHandshake, which re-authenticates) closes the connection, as in Kafka?"""
        return self.authenticator is not None and self.authenticator.session_expired(api_key)

    def authenticated_as(self, user: str) -> None:
        self.principal = f"User:{user}"
