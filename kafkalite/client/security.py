"""What a client connection needs for TLS and SASL, built once from kafka-python's keys.

``security_protocol`` is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. TLS uses
``ssl_context`` if given, else a context from ``ssl_cafile`` (the CAs to trust; the system's
otherwise), ``ssl_certfile`` / ``ssl_keyfile`` / ``ssl_password`` (a client certificate),
``ssl_crlfile`` and ``ssl_ciphers``, checking the broker's host name unless
``ssl_check_hostname`` is False. SASL speaks ``sasl_mechanism`` PLAIN, SCRAM-SHA-256 or
SCRAM-SHA-512 with ``sasl_plain_username`` / ``sasl_plain_password``, or OAUTHBEARER with
kafka-python's ``sasl_oauth_token_provider``.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kafkalite.protocol.sasl_client import SASL_MECHANISMS, SaslCredentials, SaslExchange

__all__ = [
    "AUTHENTICATION_ERRORS",
    "SASL_MECHANISMS",
    "ClientSecurity",
    "SaslCredentials",
    "SaslExchange",
    "client_security",
]
AUTHENTICATION_ERRORS = (SaslAuthenticationFailedError, UnsupportedSaslMechanismError,
                         IllegalSaslStateError)
"""A connection closed with one of these will not do better by retrying: callers waiting
for metadata get it at once (as Kafka's clients raise AuthenticationException)."""


@dataclass(frozen=True)
class ClientSecurity:
    ssl_context: ssl.SSLContext | None
    sasl: SaslCredentials | None


def client_security(config: Mapping[str, Any]) -> ClientSecurity:
    """From validated settings (see :func:`kafkalite.client.settings.check_security`)."""
    protocol = config["security_protocol"]
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        context = config["ssl_context"] or _ssl_context(config)
    sasl = None
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        if config["sasl_mechanism"] == "OAUTHBEARER":
            sasl = SaslCredentials("OAUTHBEARER",
                                   token_provider=config["sasl_oauth_token_provider"])
        else:
            sasl = SaslCredentials(config["sasl_mechanism"], config["sasl_plain_username"],
                                   config["sasl_plain_password"])
    return ClientSecurity(context, sasl)


def _ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=config["ssl_cafile"])
    context.check_hostname = bool(config["ssl_check_hostname"])
    if config["ssl_certfile"] is not None:
        try:
            context.load_cert_chain(config["ssl_certfile"], config["ssl_keyfile"],
                                    password=config["ssl_password"])
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError("ssl_certfile", f"cannot load the client certificate: {exc}"
                              ) from None
    if config["ssl_crlfile"] is not None:
        try:
            context.load_verify_locations(config["ssl_crlfile"])
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError("ssl_crlfile", str(exc)) from None
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    if config["ssl_ciphers"] is not None:
        try:
            context.set_ciphers(config["ssl_ciphers"])
        except ssl.SSLError as exc:
            raise ConfigError("ssl_ciphers", str(exc)) from None
    return context
