"""Client settings written the Java way, as Kafka tools and Spark take them.

``fetch.max.bytes=1048576`` (kcat's ``-X``, Kafka's ``--producer-props``, Spark's
``kafka.``-prefixed options) is kafkalite's ``fetch_max_bytes=1048576``: dots become
underscores and the text becomes an int or a bool where it spells one. The clients validate
the result, so a misspelt key fails with an error naming it. The security properties
(``security.protocol``, ``sasl.*``, ``ssl.*``) translate by their own table, with the user
and password taken from ``sasl.jaas.config``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kafkalite.errors import ConfigError, UnknownConfigError

_INT = re.compile(r"-?\d+")


def setting_name(java_name: str) -> str:
    """``fetch.max.bytes`` -> ``fetch_max_bytes`` (an underscored name stays as it is)."""
    return java_name.strip().replace(".", "_")


_CLOSE_ENOUGH = 0.7
"""How alike (difflib's ratio) a known key must be to a typo to be suggested."""


def nearest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` most likely meant: the same key in another case or spelt the
    Java way (``linger.ms``), else the closest spelling, if any is close enough."""
    candidates = sorted(known)
    spellings = (key.lower(), setting_name(key).lower())
    for spelling in spellings:
        if spelling in candidates:
            return spelling
    for spelling in spellings:
        close = difflib.get_close_matches(spelling, candidates, n=1, cutoff=_CLOSE_ENOUGH)
        if close:
            return close[0]
    return None


def unknown_config(key: str, known: Iterable[str], what: str) -> UnknownConfigError:
    """The error for a key that is not in ``known``, suggesting the nearest one."""
    return UnknownConfigError(key, what, nearest_key(key, known))


def typed_value(raw: str) -> Any:
    """Tools pass every value as text; the clients want ints and bools as such."""
    text = raw.strip()
    if _INT.fullmatch(text):
        return int(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return raw


def client_setting(java_name: str, raw: str) -> tuple[str, Any]:
    """One ``name=value`` property as a client keyword argument."""
    return setting_name(java_name), typed_value(raw)


# -- security properties -----------------------------------------------------------------------
# Kafka's security settings are not kafka-python's names with dots (``ssl.truststore.location``
# is ``ssl_cafile``, ``sasl.jaas.config`` holds the user and password), so they have their own
# translation, shared by the CLI's --command-config and Spark's kafka.-prefixed options.

SECURITY_PREFIXES = ("security.", "sasl.", "ssl.")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
LOGIN_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                 "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                 "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}
SECURITY_PROPERTIES = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.jaas.config": "sasl_plain_username",
    "ssl.truststore.location": "ssl_cafile",
    "ssl.truststore.type": None,
    "ssl.keystore.location": "ssl_certfile",
    "ssl.keystore.type": None,
    "ssl.key.password": "ssl_password",
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",
}
"""The Kafka security properties kafkalite takes, each with the SDK setting it becomes (the
JAAS line also gives ``sasl_plain_password``; the store types only check for PEM)."""
_REFUSED = {
    "ssl.truststore.password": "a PEM truststore has no password; leave it out",
    "ssl.keystore.password": "a PEM keystore has no store password; an encrypted key's "
                             "password is ssl.key.password",
    "ssl.truststore.certificates": "inline PEM is not supported; put the CA certificates in "
                                   "a file and give ssl.truststore.location",
    "ssl.keystore.certificate.chain": "inline PEM is not supported; put the chain and key in "
                                      "one file and give ssl.keystore.location",
    "ssl.keystore.key": "inline PEM is not supported; put the chain and key in one file and "
                        "give ssl.keystore.location",
}
_JAAS = re.compile(r"\s*(?P<module>[\w.]+)\s+required\s+(?P<options>.*?);?\s*$", re.DOTALL)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')


def is_security_property(name: str) -> bool:
    """``security.protocol`` and every ``sasl.*`` / ``ssl.*`` property."""
    return name.startswith(SECURITY_PREFIXES)


def property_name(setting: str) -> str:
    """The Kafka property that sets an SDK setting, to name it in an error:
    ``ssl_cafile`` -> ``ssl.truststore.location``, ``fetch_max_bytes`` -> ``fetch.max.bytes``."""
    if setting == "sasl_plain_password":
        return "sasl.jaas.config"
    for name, target in SECURITY_PROPERTIES.items():
        if target == setting:
            return name
    return setting.replace("_", ".")


def security_settings(properties: Mapping[str, str]) -> dict[str, Any]:
    """The SDK settings for Kafka security ``properties``; ConfigError naming the property
    that is unknown or whose value kafkalite cannot use. Files must exist."""
    settings: dict[str, Any] = {}
    for key, value in properties.items():
        if key in _REFUSED:
            raise ConfigError(key, _REFUSED[key])
        if key not in SECURITY_PROPERTIES:
            raise ConfigError(key, "not a setting kafkalite takes; the security settings are "
                              + ", ".join(SECURITY_PROPERTIES))
        if key == "security.protocol":
            if value.upper() not in PROTOCOLS:
                raise ConfigError(key, f"{value!r} is not one of {', '.join(PROTOCOLS)}")
            settings["security_protocol"] = value.upper()
        elif key == "sasl.mechanism":
            if value not in LOGIN_MODULES:
                raise ConfigError(key, f"{value!r} is not one of {', '.join(LOGIN_MODULES)}")
            settings["sasl_mechanism"] = value
        elif key in ("ssl.truststore.location", "ssl.keystore.location"):
            if not Path(value).is_file():
                raise ConfigError(key, f"no such file {value!r}")
            settings["ssl_cafile" if key == "ssl.truststore.location" else "ssl_certfile"] = value
        elif key in ("ssl.truststore.type", "ssl.keystore.type"):
            if value.upper() != "PEM":
                raise ConfigError(key, f"only PEM files are supported, not {value!r}")
        elif key == "ssl.key.password":
            settings["ssl_password"] = value
        elif key == "ssl.endpoint.identification.algorithm":
            if value.lower() not in ("https", ""):
                raise ConfigError(key, f"{value!r} is neither https nor empty")
            settings["ssl_check_hostname"] = value.lower() == "https"
    if "sasl.jaas.config" in properties:  # once the mechanism is known
        settings.update(_jaas(properties["sasl.jaas.config"],
                              settings.get("sasl_mechanism", "PLAIN")))
    return settings


def _jaas(text: str, mechanism: str) -> dict[str, str]:
    """``<LoginModule> required username="..." password="...";`` as the SDK's SASL user."""
    key = "sasl.jaas.config"
    match = _JAAS.fullmatch(text)
    if match is None:
        raise ConfigError(key, "expected '<LoginModule> required username=\"...\" "
                          "password=\"...\";'")
    if match.group("module") != LOGIN_MODULES[mechanism]:
        raise ConfigError(key, f"{mechanism} needs {LOGIN_MODULES[mechanism]}, not "
                          f"{match.group('module')}")
    options = {m.group(1): m.group(3) if m.group(2) is None else m.group(2)
               for m in _JAAS_OPTION.finditer(match.group("options"))}
    for option in ("username", "password"):
        if not options.get(option):
            raise ConfigError(key, f"no {option}")
    return {"sasl_plain_username": options["username"],
            "sasl_plain_password": options["password"]}
