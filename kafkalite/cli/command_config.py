"""``--command-config FILE``: a Kafka client properties file, as Kafka's tools take it.

The security settings of such a file become the SDK's kafka-python settings (translated by
:func:`kafkalite.properties.security_settings`, which Spark's options share); any other key,
or a value kafkalite cannot use, is an error naming the key (other client settings go to
``-X``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kafkalite.properties import is_security_property, security_settings
from kafkalite.protocol.java_properties import parse_properties


def settings(properties: dict[str, str]) -> dict[str, Any]:
    """The SDK's settings for a file's properties: only security ones belong in it."""
    for key in properties:
        if not is_security_property(key):
            raise ValueError(f"{key}: not a setting --command-config takes (security.protocol, "
                             "sasl.*, ssl.*); pass other client settings with -X")
    return security_settings(properties)


def command_config(text: str) -> dict[str, Any]:
    """argparse type of ``--command-config``: the file's settings, or one line naming why."""
    path = Path(text)
    try:
        return settings(parse_properties(path.read_text(encoding="utf-8").splitlines()))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc.strerror}") from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc}") from None
