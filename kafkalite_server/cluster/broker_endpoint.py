"""Where a broker is reached, as brokers register it and the controller announces it."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class BrokerEndpoint:
    """Where a broker is reached: ``host``/``port`` of its inter-broker listener, and every
    listener as (name, host, port, security protocol), the inter-broker one first."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    listeners: tuple[tuple[str, str, int, str], ...] = ()

    def on(self, listener: str | None) -> BrokerEndpoint:
        """This broker as clients of ``listener`` reach it (itself if it has no such
        listener, or ``listener`` is None)."""
        for name, host, port, _protocol in self.listeners:
            if name == listener:
                return replace(self, host=host, port=port)
        return self
