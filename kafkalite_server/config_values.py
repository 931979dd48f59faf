"""Parsers for Kafka-style configuration values, shared by broker and topic configs.

Each parser takes ``(key, text)`` and returns the typed value or raises
:class:`~kafkalite.errors.ConfigError` naming the key, so a bad value in a properties file,
a ``--set`` flag or a CreateTopics request is reported the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalite.errors import ConfigError

LONG_MAX = 2**63 - 1
"""Java's Long.MAX_VALUE: Kafka's spelling of "never" for flush and retention settings."""

Parser = Callable[[str, str], Any]


def integer(minimum: int, maximum: int = LONG_MAX, scale: int = 1) -> Parser:
    """An integer in [minimum, maximum]; non-negative values are multiplied by ``scale``
    (``log.retention.hours`` is stored in milliseconds)."""

    def parse(key: str, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(key, f"{text!r} is not an integer") from None
        if not minimum <= value <= maximum:
            raise ConfigError(key, f"{value} is outside [{minimum}, {maximum}]")
        return value * scale if value >= 0 else value

    return parse


def decimal(minimum: float, maximum: float) -> Parser:
    """A number (Java double) in [minimum, maximum], e.g. ``min.cleanable.dirty.ratio``."""

    def parse(key: str, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(key, f"{text!r} is not a number") from None
        if not minimum <= value <= maximum:
            raise ConfigError(key, f"{value} is outside [{minimum}, {maximum}]")
        return value

    return parse


def never_when_max(minimum: int) -> Parser:
    """An integer where Long.MAX_VALUE (Kafka's default for flush.*) means never: None."""
    parse_int = integer(minimum)

    def parse(key: str, text: str) -> int | None:
        value = parse_int(key, text)
        return None if value == LONG_MAX else value

    return parse


def boolean(key: str, text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ConfigError(key, f"{text!r} is not true or false")
    return lowered == "true"


def choice(options: tuple[str, ...]) -> Parser:
    def parse(key: str, text: str) -> str:
        if text not in options:
            raise ConfigError(key, f"{text!r} is not one of {', '.join(options)}")
        return text

    return parse


def format_value(value: object) -> str:
    """The text Kafka shows for a parsed value (DescribeConfigs, ``describe()``)."""
    if value is None:
        return str(LONG_MAX)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)
