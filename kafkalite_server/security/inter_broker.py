"""How a broker connects to other brokers: over its inter-broker listener's security protocol.

Replica fetchers, the controller's channels and WriteTxnMarkers all open connections through
:meth:`PeerSecurity.connect`, with Kafka's settings:

- the listener is ``inter.broker.listener.name`` (or the one named as
  ``security.inter.broker.protocol``); the other broker is reached at its address on the
  listener of the same name;
- SSL and SASL_SSL: TLS with the listener's ``ssl.*`` settings in client mode
  (:func:`~kafkalite_server.network.tls.client_context`);
- SASL_PLAINTEXT and SASL_SSL: ``sasl.mechanism.inter.broker.protocol`` (default PLAIN; it
  must be in the listener's ``sasl.enabled.mechanisms``), logging in as the broker's own
  principal with the ``username`` / ``password`` options of the listener's JAAS entry for
  that mechanism, ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (else
  ``sasl.jaas.config``), as Kafka's brokers do; with OAUTHBEARER, an unsecured token made
  from the entry's ``unsecuredLoginStringClaim_sub`` and other ``unsecuredLogin*`` options
  (:class:`~kafkalite_server.security.oauthbearer.UnsecuredLoginTokens`). A login with a
  session lifetime (KIP-368) is renewed on the same connection before the request that
  would find it over (:class:`PeerLogin`).

The broker's principal needs ClusterAction on the Cluster when an authorizer is on: list it
in ``super.users``.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import error_for_code
from kafkalite.protocol.exchange import RequestExchange
from kafkalite.protocol.sasl_client import ReauthSchedule, SaslCredentials
from kafkalite.protocol.sasl_oauthbearer import MECHANISM as OAUTHBEARER
from kafkalite.protocol.scram import ScramError
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.config import BrokerConfig, listener_value
from kafkalite_server.network.listeners import resolve_listeners
from kafkalite_server.network.tls import client_context
from kafkalite_server.security.jaas import parse_jaas
from kafkalite_server.security.oauthbearer import UnsecuredLoginTokens

log = logging.getLogger(__name__)

SASL_HANDSHAKE_VERSION = 1
SASL_AUTHENTICATE_VERSION = 1
_MAX_SASL_ROUNDS = 4
"""PLAIN takes one SaslAuthenticate, SCRAM two; a server asking for more is broken."""
_READ_BYTES = 64 * 1024


class PeerAuthenticationError(ConnectionError):
    """The other broker refused this broker's login: the connection is closed and retried
    like any lost connection (and logged with this message)."""


@dataclass(frozen=True)
class PeerSecurity:
    listener: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None
    problem: str | None = None
    """Why this broker cannot log in to others (a broker outside a ZooKeeper cluster starts
    anyway: it may never need to; each attempt then fails with this)."""

    def address(self, endpoint: BrokerEndpoint) -> tuple[str, int]:
        """The other broker's address on the inter-broker listener."""
        for name, host, port, _protocol in endpoint.listeners:
            if name == self.listener:
                return host, port
        return endpoint.host, endpoint.port

    async def connect(self, endpoint: BrokerEndpoint, exchange: RequestExchange,
                      ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """An open, authenticated connection; ``exchange`` carried the SASL requests and
        goes on carrying the caller's. Raises OSError / ssl.SSLError /
        PeerAuthenticationError (callers bound the time with their own timeout)."""
        if self.problem is not None:
            raise PeerAuthenticationError(self.problem)
        host, port = self.address(endpoint)
        reader, writer = await asyncio.open_connection(
            host, port, ssl=self.ssl_context,
            server_hostname=host if self.ssl_context is not None else None)
        try:
            if self.sasl is not None:
                login = PeerLogin(self.sasl)
                await login.login(lambda key, version, body: _send_and_receive(
                    reader, writer, exchange, key, version, body))
                _logins[writer] = login
        except BaseException:
            writer.close()
            raise
        return reader, writer


_logins: weakref.WeakKeyDictionary[asyncio.StreamWriter, PeerLogin] = \
    weakref.WeakKeyDictionary()
"""The SASL login of each connection :meth:`PeerSecurity.connect` opened."""


async def roundtrip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    exchange: RequestExchange, api_key: int, api_version: int,
                    body: Mapping[str, Any]) -> dict[str, Any]:
    """One request and its response body on an open connection (re-authenticated first
    when its login's session is about to end)."""
    login = _logins.get(writer)
    if login is not None:
        await login.renew_if_due(lambda key, version, request: _send_and_receive(
            reader, writer, exchange, key, version, request))
    return await _send_and_receive(reader, writer, exchange, api_key, api_version, body)


async def _send_and_receive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            exchange: RequestExchange, api_key: int, api_version: int,
                            body: Mapping[str, Any]) -> dict[str, Any]:
    writer.write(exchange.request(api_key, api_version, body))
    await writer.drain()
    while True:
        data = await reader.read(_READ_BYTES)
        if not data:
            raise ConnectionResetError(f"connection closed awaiting api key {api_key}")
        responses = exchange.receive(data)
        if responses:
            return responses[0].body


Send = Callable[[int, int, Mapping[str, Any]], Awaitable[dict[str, Any]]]


class PeerLogin:
    """One connection's login to another broker, renewed on the same connection before
    the other broker's session lifetime ends (KIP-368, as the SDK's connections do)."""

    def __init__(self, credentials: SaslCredentials,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._credentials = credentials
        self._clock = clock
        self._schedule = ReauthSchedule()

    async def login(self, send: Send) -> None:
        lifetime_ms = await authenticate(send, self._credentials)
        self._schedule.session_started(lifetime_ms, self._clock())

    async def renew_if_due(self, send: Send) -> None:
        """Requests on a peer connection go one at a time, so none is in flight here."""
        if self._schedule.due(self._clock()):
            log.debug("re-authenticating to another broker with %s",
                      self._credentials.mechanism)
            await self.login(send)


async def authenticate(send: Send, credentials: SaslCredentials) -> int:
    """SaslHandshake v1, then the mechanism's SaslAuthenticate rounds, with ``send``
    (one request, its response body) on a connection; the session lifetime the other
    broker gave (0: none)."""
    answer = await send(ApiKey.SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION,
                        {"mechanism": credentials.mechanism})
    _check(answer, f"mechanism {credentials.mechanism} (offered: {answer['mechanisms']})")
    sasl = credentials.exchange()
    token: bytes | None = sasl.first()
    for _round in range(_MAX_SASL_ROUNDS):
        assert token is not None
        answer = await send(ApiKey.SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION,
                            {"auth_bytes": token})
        _check(answer, answer.get("error_message") or "login refused")
        try:
            token = sasl.next(bytes(answer["auth_bytes"]))
        except ScramError as exc:
            raise PeerAuthenticationError(f"the broker's SCRAM answer: {exc}") from None
        if token is None or sasl.complete:
            return int(answer.get("session_lifetime_ms", 0))
    raise PeerAuthenticationError(f"no end to the SASL exchange after {_MAX_SASL_ROUNDS} "
                                  "rounds")


def _check(answer: dict[str, Any], what: str) -> None:
    if answer["error_code"]:
        name = error_for_code(answer["error_code"]).__name__
        raise PeerAuthenticationError(f"{name}: {what}")


def peer_security(config: BrokerConfig) -> PeerSecurity:
    """From the broker config; a ConfigError names the key that does not fit (for a broker
    of a ZooKeeper cluster; any other broker keeps it as its :attr:`PeerSecurity.problem`)."""
    listener = resolve_listeners(config)[0]
    try:
        context = client_context(config, listener.name) if listener.uses_tls else None
        sasl = _credentials(config, listener.name) if listener.uses_sasl else None
    except ConfigError as exc:
        if config.zookeeper_connect:
            raise
        return PeerSecurity(listener.name, problem=str(exc))
    return PeerSecurity(listener.name, context, sasl)


def _credentials(config: BrokerConfig, listener: str) -> SaslCredentials:
    key = "sasl.mechanism.inter.broker.protocol"
    mechanism = config.sasl_mechanism_inter_broker_protocol.upper()
    enabled = listener_value(config, listener, "sasl.enabled.mechanisms")
    if mechanism not in enabled:
        raise ConfigError(key, f"{mechanism} is not in listener {listener}'s "
                               f"sasl.enabled.mechanisms ({', '.join(enabled)})")
    jaas_key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = listener_value(config, listener, f"{mechanism.lower()}.sasl.jaas.config")
    if text is None:
        jaas_key, text = "sasl.jaas.config", config.sasl_jaas_config
    options = parse_jaas(jaas_key, text).options if text is not None else {}
    if mechanism == OAUTHBEARER:
        return SaslCredentials(mechanism, token_provider=UnsecuredLoginTokens(jaas_key, options))
    if "username" not in options or "password" not in options:
        raise ConfigError(jaas_key, f"the inter-broker listener {listener} uses SASL "
                                    f"{mechanism}: its JAAS entry needs the broker's own "
                                    'username="..." password="..."')
    return SaslCredentials(mechanism, options["username"], options["password"])
