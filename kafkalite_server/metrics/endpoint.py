"""``kafkalite.metrics.listener``: the HTTP endpoint Prometheus scrapes (``/metrics``).

prometheus_client (the ``metrics`` extra) is imported only when the key is set. Its
threaded server answers on threads of its own with a registry of this
broker's collector and the process collector (memory, CPU, open files), so a slow scraper
never holds the event loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from typing import TYPE_CHECKING

from kafkalite.errors import ConfigError
from kafkalite_server.config import split_host_port

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from kafkalite_server.broker import Broker
    from kafkalite_server.metrics.broker_collector import BrokerCollector

log = logging.getLogger(__name__)

KEY = "kafkalite.metrics.listener"


class MetricsEndpoint:
    def __init__(self, address: str) -> None:
        self.host, self.port = split_host_port(KEY, address)
        if importlib.util.find_spec("prometheus_client") is None:
            raise ConfigError(KEY, "needs prometheus_client: pip install 'kafkalite[metrics]'")
        self._server: WSGIServer | None = None
        self._collector: BrokerCollector | None = None

    def start(self, broker: Broker) -> None:
        """Binds and serves; the bound port replaces 0 in :attr:`port`."""
        from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

        from kafkalite_server.metrics.broker_collector import BrokerCollector

        registry = CollectorRegistry()
        self._collector = BrokerCollector(broker, asyncio.get_running_loop())
        registry.register(self._collector)
        ProcessCollector(registry=registry)
        try:
            self._server, _thread = start_http_server(self.port, self.host, registry)
        except OSError as exc:
            raise ConfigError(KEY, f"cannot listen on {self.host}:{self.port}: "
                                   f"{exc.strerror or exc}") from None
        self.port = self._server.server_port
        log.info("serving Prometheus metrics on http://%s:%d/metrics", self.host, self.port)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await asyncio.to_thread(server.shutdown)
            server.server_close()
        if self._collector is not None:
            self._collector.consumer_lag.close()
