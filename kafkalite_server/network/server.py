"""The broker's listening sockets, one per listener, with TLS where the listener asks.

Each connection is served with the :class:`~kafkalite_server.network.session.Session` of
its listener. A broker bound beyond the loopback interface with a listener that neither
authenticates (SASL) nor checks client certificates logs a warning at start.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
from collections.abc import Callable

from kafkalite_server.config import BrokerConfig
from kafkalite_server.network.listeners import (
    Listener,
    authenticates,
    is_loopback,
    resolve_listeners,
)
from kafkalite_server.network.tls import server_context

log = logging.getLogger(__name__)

_TLS_HANDSHAKE_TIMEOUT_S = 10.0

ConnectionCallback = Callable[[Listener, asyncio.StreamReader, asyncio.StreamWriter], None]


class ListenerSet:
    def __init__(self, config: BrokerConfig) -> None:
        self.listeners = resolve_listeners(config)
        self._tls: dict[str, ssl.SSLContext] = {
            listener.name: server_context(config, listener.name)
            for listener in self.listeners if listener.uses_tls}
        self._authenticates = {listener.name: authenticates(config, listener)
                               for listener in self.listeners}
        self.ports: dict[str, int] = {}
        self._servers: list[asyncio.Server] = []

    @property
    def inter_broker(self) -> Listener:
        return self.listeners[0]

    @property
    def uses_sasl(self) -> bool:
        return any(listener.uses_sasl for listener in self.listeners)

    async def start(self, on_connection: ConnectionCallback) -> None:
        for listener in self.listeners:
            server = await asyncio.start_server(
                functools.partial(on_connection, listener),
                listener.host or None, listener.port, reuse_address=True,
                ssl=self._tls.get(listener.name),
                ssl_handshake_timeout=_TLS_HANDSHAKE_TIMEOUT_S
                if listener.name in self._tls else None)
            self._servers.append(server)
            self.ports[listener.name] = server.sockets[0].getsockname()[1]
            if not is_loopback(listener.host) and not self._authenticates[listener.name]:
                log.warning("listener %s binds %s:%d without authentication: anyone who "
                            "can reach it may use the broker (use SASL_SSL, SASL_PLAINTEXT "
                            "or SSL with ssl.client.auth=required)", listener.name,
                            listener.host or "*", self.ports[listener.name])

    def advertised(self) -> tuple[tuple[str, str, int, str], ...]:
        """(listener name, host, port, security protocol), the inter-broker listener first."""
        return tuple((listener.name, listener.advertised_host,
                      listener.advertised_port or self.ports.get(listener.name, listener.port),
                      listener.protocol) for listener in self.listeners)

    async def close(self) -> None:
        """Stop accepting, then close the listening sockets.

        A connection accepted in the loop turn that closes a server would be set up one
        turn later, against a closed server: Python 3.11 then fails an assertion inside
        asyncio and leaves that socket open, unserved, until garbage collection, and its
        client waits out its request timeout. So the listening sockets stop being read
        first, and one loop turn lets every connection already accepted reach the
        connection callback (which closes it when the broker is stopping).
        """
        loop = asyncio.get_running_loop()
        for server in self._servers:
            for sock in server.sockets:
                loop.remove_reader(sock.fileno())
        await asyncio.sleep(0)
        for server in self._servers:
            server.close()

    async def wait_closed(self) -> None:
        for server in self._servers:
            await server.wait_closed()
