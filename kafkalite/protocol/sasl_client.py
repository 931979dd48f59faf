"""The client side of a SASL exchange, sans-IO: PLAIN or SCRAM-SHA-256/512 tokens for
SaslAuthenticate. The SDK's connections and the broker's own connections to other brokers
move the tokens; this module only makes and checks them."""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite.protocol.sasl_plain import plain_message
from kafkalite.protocol.scram import MECHANISMS as SCRAM_MECHANISMS
from kafkalite.protocol.scram import ScramClient

SASL_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)


@dataclass(frozen=True)
class SaslCredentials:
    mechanism: str
    username: str
    password: str

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
        if self._scram is None:
            return plain_message(self.credentials.username, self.credentials.password)
        return self._scram.first_message()

    def next(self, token: bytes) -> bytes | None:
        """The reply to a server token, or None when the exchange is over (ScramError if
        the server's answer does not check out)."""
        if self._scram is None:
            self.complete = True
            return None
        reply = self._scram.receive(token)
        self.complete = self._scram.complete
        return reply
