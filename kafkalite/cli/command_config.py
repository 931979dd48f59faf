"""``--command-config FILE``: a Kafka client properties file, as Kafka's tools take it.

The security settings of such a file become the SDK's kafka-python settings; any other key,
or a value kafkalite cannot use, is an error naming the key (other client settings go to
``-X``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from kafkalite.protocol.java_properties import parse_properties

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_LOGIN_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                  "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                  "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}
_JAAS = re.compile(r"\s*(?P<module>[\w.]+)\s+required\s+(?P<options>.*?);?\s*$", re.DOTALL)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')


def security_settings(properties: dict[str, str]) -> dict[str, Any]:
    """The SDK's settings for ``properties``; ValueError naming the key that does not fit."""
    settings: dict[str, Any] = {}
    for key, value in properties.items():
        if key == "security.protocol":
            if value.upper() not in _PROTOCOLS:
                raise ValueError(f"{key}: {value!r} is not one of {', '.join(_PROTOCOLS)}")
            settings["security_protocol"] = value.upper()
        elif key == "sasl.mechanism":
            if value not in _LOGIN_MODULES:
                raise ValueError(f"{key}: {value!r} is not one of {', '.join(_LOGIN_MODULES)}")
            settings["sasl_mechanism"] = value
        elif key == "sasl.jaas.config":
            continue  # below, once the mechanism is known
        elif key in ("ssl.truststore.location", "ssl.keystore.location"):
            if not Path(value).is_file():
                raise ValueError(f"{key}: no such file {value!r}")
            settings["ssl_cafile" if key == "ssl.truststore.location" else "ssl_certfile"] = value
        elif key in ("ssl.truststore.type", "ssl.keystore.type"):
            if value.upper() != "PEM":
                raise ValueError(f"{key}: only PEM files are supported, not {value!r}")
        elif key == "ssl.key.password":
            settings["ssl_password"] = value
        elif key == "ssl.endpoint.identification.algorithm":
            if value.lower() not in ("https", ""):
                raise ValueError(f"{key}: {value!r} is neither https nor empty")
            settings["ssl_check_hostname"] = value.lower() == "https"
        else:
            raise ValueError(f"{key}: not a setting --command-config takes (security.protocol, "
                             "sasl.*, ssl.*); pass other client settings with -X")
    if "sasl.jaas.config" in properties:
        settings.update(_jaas(properties["sasl.jaas.config"],
                              settings.get("sasl_mechanism", "PLAIN")))
    return settings


def _jaas(text: str, mechanism: str) -> dict[str, str]:
    key = "sasl.jaas.config"
    match = _JAAS.fullmatch(text)
    if match is None:
        raise ValueError(f"{key}: expected '<LoginModule> required username=\"...\" "
                         f"password=\"...\";'")
    if match.group("module") != _LOGIN_MODULES[mechanism]:
        raise ValueError(f"{key}: {mechanism} needs {_LOGIN_MODULES[mechanism]}, not "
                         f"{match.group('module')}")
    options = {m.group(1): m.group(3) if m.group(2) is None else m.group(2)
               for m in _JAAS_OPTION.finditer(match.group("options"))}
    for option in ("username", "password"):
        if not options.get(option):
            raise ValueError(f"{key}: no {option}")
    return {"sasl_plain_username": options["username"],
            "sasl_plain_password": options["password"]}


def command_config(text: str) -> dict[str, Any]:
    """argparse type of ``--command-config``: the file's settings, or one line naming why."""
    path = Path(text)
    try:
        return security_settings(parse_properties(path.read_text(encoding="utf-8").splitlines()))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc.strerror}") from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc}") from None
