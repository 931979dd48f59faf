"""kafka-python's configuration keys that kafkalite accepts without acting on them, and the
security keys, which it checks.

A kafka-python program passes these keys; refusing them would break the one-line migration,
and silently honouring a key that asks for something kafkalite cannot do would be worse. So
each key here is one of:

- *ignored*: it has no meaning for kafkalite (its reason says why) and is accepted as is;
- *security*: ``security_protocol`` PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, with the
  ``ssl_*`` keys (TLS) and ``sasl_mechanism`` PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512 with
  ``sasl_plain_username`` / ``sasl_plain_password``, or OAUTHBEARER with
  ``sasl_oauth_token_provider`` (see :mod:`kafkalite.client.security`); as in kafka-python
  they only take effect with a protocol that uses them. Kerberos (GSSAPI) is refused
  naming the key;
- *refused unless unset*: proxies, whose absence would change where bytes go.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from typing import Any

from kafkalite.errors import ConfigError, UnsupportedFeatureError
from kafkalite.protocol.sasl_client import SASL_MECHANISMS, oauth_provider_error

IGNORED_CLIENT_KEYS: Mapping[str, str] = {
    "api_version": "each API's version is negotiated with the broker (ApiVersions)",
    "selector": "the I/O thread uses the platform's default selector",
    "client_dns_lookup": "a broker's host name is resolved on every connect",
    "kafka_client": "kafka-python's network client class; kafkalite has its own",
    "bootstrap_timeout_ms": "bootstrapping is bounded by request_timeout_ms and max_block_ms",
    "metric_reporters": "metrics() returns every value; there are no reporter plugins",
    "metrics_num_samples": "rates are averaged since the client started",
    "metrics_sample_window_ms": "rates are averaged since the client started",
}
"""Client keys kafkalite accepts and ignores, each with the reason."""

IGNORED_CLIENT_DEFAULTS: Mapping[str, Any] = {
    "api_version": None,
    "selector": None,
    "client_dns_lookup": "use_all_dns_ips",
    "kafka_client": None,
    "bootstrap_timeout_ms": 30000,
    "metric_reporters": (),
    "metrics_num_samples": 2,
    "metrics_sample_window_ms": 30000,
}

SECURITY_DEFAULTS: Mapping[str, Any] = {
    "security_protocol": "PLAINTEXT",
    "ssl_context": None,
    "ssl_check_hostname": True,
    "ssl_cafile": None,
    "ssl_certfile": None,
    "ssl_keyfile": None,
    "ssl_password": None,
    "ssl_crlfile": None,
    "ssl_ciphers": None,
    "sasl_mechanism": None,
    "sasl_plain_username": None,
    "sasl_plain_password": None,
    "sasl_kerberos_name": None,
    "sasl_kerberos_service_name": "kafka",
    "sasl_kerberos_domain_name": None,
    "sasl_oauth_token_provider": None,
    "proxy_url": None,
    "socks5_proxy": None,
}
"""Security and proxy keys: accepted, checked by :func:`check_security`."""

SECURITY_KEY_NOTES: Mapping[str, str] = {
    "security_protocol": "'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT' or 'SASL_SSL'",
    "sasl_mechanism": "'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512' or 'OAUTHBEARER'; "
                      "'GSSAPI' raises UnsupportedFeatureError",
    "ssl_context": "used with SSL / SASL_SSL: an ssl.SSLContext (the other ssl_* keys are "
                   "then unused)",
    "ssl_check_hostname": "used with SSL / SASL_SSL: check the broker's certificate names",
    "ssl_cafile": "used with SSL / SASL_SSL: CA certificates to trust (else the system's)",
    "ssl_certfile": "used with SSL / SASL_SSL: client certificate chain (PEM)",
    "ssl_keyfile": "used with SSL / SASL_SSL: client private key (PEM)",
    "ssl_password": "used with SSL / SASL_SSL: password of an encrypted ssl_keyfile",
    "ssl_crlfile": "used with SSL / SASL_SSL: a CRL; the broker certificate is checked "
                   "against it",
    "ssl_ciphers": "used with SSL / SASL_SSL: OpenSSL cipher list",
    "sasl_plain_username": "used with SASL_*: the user (PLAIN and SCRAM)",
    "sasl_plain_password": "used with SASL_*: the password (PLAIN and SCRAM)",
    "sasl_kerberos_name": "unused: GSSAPI is not supported",
    "sasl_kerberos_service_name": "unused: GSSAPI is not supported",
    "sasl_kerberos_domain_name": "unused: GSSAPI is not supported",
    "sasl_oauth_token_provider": "used with OAUTHBEARER: an object whose token() returns "
                                 "the bearer token (and optional extensions())",
    "proxy_url": "None only; a proxy raises UnsupportedFeatureError",
    "socks5_proxy": "None only; a proxy raises UnsupportedFeatureError",
}
"""How the security keys are treated; ``ssl_*`` / ``sasl_*`` keys are unused under
PLAINTEXT, as in kafka-python."""

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def check_security(config: Mapping[str, Any]) -> None:
    """Refuse, naming the key, a setting that cannot work: an unknown protocol, a SASL
    mechanism kafkalite does not speak, missing SASL credentials, a proxy."""
    protocol = config["security_protocol"]
    if protocol not in _PROTOCOLS:
        raise ConfigError("security_protocol", f"must be one of {', '.join(_PROTOCOLS)}, "
                          f"not {protocol!r}")
    if protocol in ("SSL", "SASL_SSL"):
        context = config["ssl_context"]
        if context is not None and not isinstance(context, ssl.SSLContext):
            raise ConfigError("ssl_context", f"must be an ssl.SSLContext, not {context!r}")
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanism = config["sasl_mechanism"]
        if mechanism == "GSSAPI":
            raise UnsupportedFeatureError(f"sasl_mechanism={mechanism!r}: kafkalite speaks "
                                          f"{', '.join(SASL_MECHANISMS)}")
        if mechanism not in SASL_MECHANISMS:
            raise ConfigError("sasl_mechanism", f"must be one of {', '.join(SASL_MECHANISMS)}"
                              f" with {protocol}, not {mechanism!r}")
        if mechanism == "OAUTHBEARER":
            problem = oauth_provider_error(config["sasl_oauth_token_provider"])
            if problem is not None:
                raise ConfigError("sasl_oauth_token_provider", f"OAUTHBEARER: {problem}")
        else:
            for key in ("sasl_plain_username", "sasl_plain_password"):
                if not isinstance(config[key], str) or not config[key]:
                    raise ConfigError(key, f"{mechanism} needs a user name and password")
    for key in ("proxy_url", "socks5_proxy"):
        if config[key] is not None:
            raise UnsupportedFeatureError(f"{key}={config[key]!r}: connecting through a proxy "
                                          "is not supported")


def socket_options(config: Mapping[str, Any]) -> tuple[tuple[int, int, int], ...]:
    """``socket_options`` plus SO_SNDBUF / SO_RCVBUF from ``send_buffer_bytes`` /
    ``receive_buffer_bytes`` (kafka-python's composition), checked for shape."""
    options = []
    for item in config["socket_options"] or ():
        try:
            level, option, value = item
        except (TypeError, ValueError):
            raise ConfigError("socket_options", f"entries must be (level, option, value) "
                              f"tuples, got {item!r}") from None
        options.append((level, option, value))
    if config["send_buffer_bytes"] is not None:
        options.append((socket.SOL_SOCKET, socket.SO_SNDBUF, config["send_buffer_bytes"]))
    if config["receive_buffer_bytes"] is not None:
        options.append((socket.SOL_SOCKET, socket.SO_RCVBUF, config["receive_buffer_bytes"]))
    return tuple(options)
