"""TLS for a broker listener, with Python's ``ssl`` over PEM files (``ssl.keystore.type=PEM``).

``ssl.keystore.location`` holds the certificate chain and the private key (encrypted with
``ssl.key.password`` if set); ``ssl.truststore.location`` holds the CA certificates that
client certificates are checked against. ``ssl.client.auth`` is none, requested (a client
may present a certificate) or required. The principal of a client certificate is its
subject in RFC 2253 order (``User:CN=alice,O=example``), as Kafka's default principal
builder gives it. Every file or value problem is a ConfigError naming its key (with the
``listener.name.<listener>.`` prefix when the setting came from there).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite_server.config import BrokerConfig, listener_value

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}


def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    def value(key: str) -> Any:
        return listener_value(config, listener, key)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    keystore = value("ssl.keystore.location")
    if keystore is None:
        raise ConfigError("ssl.keystore.location",
                          f"listener {listener} uses TLS and needs a PEM keystore")
    _configure(context, value)
    truststore = value("ssl.truststore.location")
    auth = value("ssl.client.auth")
    if auth != "none" and truststore is None:
        raise ConfigError("ssl.client.auth", f"{auth} needs ssl.truststore.location")
    context.verify_mode = _CLIENT_AUTH[auth]
    return context


def client_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The context a broker connects to another broker's ``listener`` with (Kafka uses the
    listener's settings in client mode too): the server certificate is checked against the
    truststore (the system's CAs without one), its host name unless
    ``ssl.endpoint.identification.algorithm`` is empty, and the keystore's certificate is
    offered as this broker's client certificate."""
    def value(key: str) -> Any:
        return listener_value(config, listener, key)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _configure(context, value)
    if value("ssl.truststore.location") is None:
        context.load_default_certs()
    context.check_hostname = (value("ssl.endpoint.identification.algorithm") or "").lower() \
        == "https"
    return context


def _configure(context: ssl.SSLContext, value: Callable[[str], Any]) -> None:
    """TLS versions, the keystore (if any) and the truststore (if any), for either side."""
    protocols = value("ssl.enabled.protocols")
    unknown = [p for p in protocols if p not in _VERSIONS]
    if unknown or not protocols:
        raise ConfigError("ssl.enabled.protocols", f"{', '.join(unknown) or 'nothing'}: "
                          f"kafkalite speaks {', '.join(_VERSIONS)}")
    chosen = sorted(_VERSIONS[p] for p in protocols)
    context.minimum_version, context.maximum_version = chosen[0], chosen[-1]
    keystore = value("ssl.keystore.location")
    if keystore is not None:
        password = value("ssl.key.password") or value("ssl.keystore.password")
        try:
            context.load_cert_chain(keystore, password=password)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError("ssl.keystore.location",
                              f"{keystore}: cannot load the certificate and key ({exc}); "
                              "with an encrypted key set ssl.key.password") from None
    truststore = value("ssl.truststore.location")
    if truststore is not None:
        try:
            context.load_verify_locations(truststore)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError("ssl.truststore.location", f"{truststore}: {exc}") from None


def certificate_principal(ssl_object: ssl.SSLObject | None) -> str | None:
    """``User:CN=..,O=..`` of a verified client certificate, or None."""
    if ssl_object is None:
        return None
    certificate = ssl_object.getpeercert()
    if not certificate:
        return None
    rdns = certificate.get("subject", ())
    parts = [f"{_ATTRIBUTE_NAMES.get(name, name)}={_escape(value)}"
             for rdn in reversed(rdns) for name, value in rdn]
    return "User:" + ",".join(parts) if parts else None


_ATTRIBUTE_NAMES = {"commonName": "CN", "organizationName": "O",
                    "organizationalUnitName": "OU", "countryName": "C",
                    "stateOrProvinceName": "ST", "localityName": "L",
                    "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}


def _escape(value: str) -> str:
    escaped = "".join(f"\\{char}" if char in ',+"\\<>;=' else char for char in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    return escaped
