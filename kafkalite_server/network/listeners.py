"""The broker's listeners: Kafka's ``listeners``, ``advertised.listeners``,
``listener.security.protocol.map`` and ``inter.broker.listener.name``.

Without ``listeners`` the broker has one PLAINTEXT listener on ``host.name:port`` (the CLI's
``--host``/``--port``). Each listener has a name and a security protocol (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL); the map lets a name differ from its protocol
(``INTERNAL:SASL_SSL``). Every inconsistency is a ConfigError naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite.errors import ConfigError
from kafkalite_server.config import BrokerConfig, listener_value

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_WILDCARDS = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class Listener:
    name: str
    protocol: str
    host: str
    """Bind address ('' or 0.0.0.0: every interface)."""
    port: int
    advertised_host: str
    advertised_port: int | None
    """None: the bound port."""

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def authenticates(config: BrokerConfig, listener: Listener) -> bool:
    """Does every client of this listener prove who it is (SASL, or TLS with
    ``ssl.client.auth=required``)? On any other listener a client may be User:ANONYMOUS."""
    return listener.uses_sasl or (
        listener.uses_tls and listener_value(config, listener.name, "ssl.client.auth") == "required")


def parse_endpoints(key: str, text: str) -> list[tuple[str, str, int]]:
    """``NAME://host:port,...`` as (NAME, host, port); names are unique."""
    endpoints: list[tuple[str, str, int]] = []
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, address = item.partition("://")
        host, colon, port_text = address.rpartition(":")
        if not sep or not name or not colon:
            raise ConfigError(key, f"{item!r} is not NAME://host:port")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            port = int(port_text)
        except ValueError:
            raise ConfigError(key, f"{item!r}: {port_text!r} is not a port") from None
        if not 0 <= port <= 65535:
            raise ConfigError(key, f"{item!r}: port {port} is outside [0, 65535]")
        name = name.upper()
        if any(existing == name for existing, _, _ in endpoints):
            raise ConfigError(key, f"listener name {name} appears twice")
        endpoints.append((name, host, port))
    if not endpoints:
        raise ConfigError(key, "needs at least one NAME://host:port")
    return endpoints


def parse_protocol_map(key: str, text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` as a dict."""
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip():
            raise ConfigError(key, f"{item!r} is not NAME:PROTOCOL")
        if protocol not in PROTOCOLS:
            raise ConfigError(key, f"{item!r}: {protocol!r} is not one of "
                                   f"{', '.join(PROTOCOLS)}")
        mapping[name.strip().upper()] = protocol
    return mapping


def resolve_listeners(config: BrokerConfig) -> list[Listener]:
    """The listeners to bind, the inter-broker one first."""
    if config.listeners is None:
        host = config.host_name
        advertised = config.advertised_host
        endpoints = [("PLAINTEXT", host, config.port)]
        adverts = {"PLAINTEXT": (advertised, config.advertised_port)}
    else:
        endpoints = parse_endpoints("listeners", config.listeners)
        adverts = {name: (_reachable(host), None) for name, host, _ in endpoints}
    if config.advertised_listeners is not None:
        bound = {name for name, _, _ in endpoints}
        for name, host, port in parse_endpoints("advertised.listeners",
                                                config.advertised_listeners):
            if name not in bound:
                raise ConfigError("advertised.listeners", f"{name} is not in listeners")
            adverts[name] = (_reachable(host), port or None)
    mapping = {protocol: protocol for protocol in PROTOCOLS}
    if config.listener_security_protocol_map is not None:
        mapping = parse_protocol_map("listener.security.protocol.map",
                                     config.listener_security_protocol_map)
    listeners = []
    for name, host, port in endpoints:
        protocol = mapping.get(name)
        if protocol is None:
            raise ConfigError("listener.security.protocol.map",
                              f"no security protocol for listener {name}")
        advertised_host, advertised_port = adverts[name]
        listeners.append(Listener(name, protocol, host, port, advertised_host,
                                  advertised_port))
    inter = _inter_broker_name(config, listeners)
    listeners.sort(key=lambda listener: listener.name != inter)
    return listeners


def _inter_broker_name(config: BrokerConfig, listeners: list[Listener]) -> str:
    """Kafka's rule: ``inter.broker.listener.name``, or the listener named as
    ``security.inter.broker.protocol`` (not both); unset, PLAINTEXT if there is one."""
    names = [listener.name for listener in listeners]
    key, wanted = "inter.broker.listener.name", config.inter_broker_listener_name
    if config.security_inter_broker_protocol is not None:
        if wanted is not None:
            raise ConfigError("security.inter.broker.protocol",
                              "set it or inter.broker.listener.name, not both")
        key, wanted = "security.inter.broker.protocol", config.security_inter_broker_protocol
        if wanted.upper() not in PROTOCOLS:
            raise ConfigError(key, f"{wanted!r} is not one of {', '.join(PROTOCOLS)}")
    if wanted is not None:
        if wanted.upper() not in names:
            raise ConfigError(key, f"{wanted.upper()} is not one of the listeners "
                                   f"{', '.join(names)}")
        return wanted.upper()
    return "PLAINTEXT" if "PLAINTEXT" in names else names[0]


def _reachable(host: str) -> str:
    """What to advertise for a bind address: a wildcard becomes the loopback address."""
    return "127.0.0.1" if host in _WILDCARDS else host


def is_loopback(host: str) -> bool:
    return host == "localhost" or host.startswith("127.") or host == "::1"
