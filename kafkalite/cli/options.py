"""Argument plumbing shared by every command: the parser class, common options, value types.

Every leaf command gets the same ``--bootstrap-servers``, ``--connect-timeout-ms`` and
``--verbose`` options (after the command name, as Kafka's tools take them), and a usage
error is one line, not argparse's usage dump.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any, NoReturn

from kafkalite.cli.command_config import command_config
from kafkalite.consumer.config import validate_consumer_config
from kafkalite.errors import ConfigError, UnknownConfigError
from kafkalite.producer.config import validate_producer_config
from kafkalite.properties import client_setting, property_name

USAGE_ERROR = 2
DEFAULT_BOOTSTRAP = "localhost:9092"
BOOTSTRAP_ENV = "KAFKALITE_BOOTSTRAP_SERVERS"

Handler = Callable[[argparse.Namespace], int]
_VALIDATORS: dict[str, Callable[[dict[str, Any]], object]] = {
    "producer": validate_producer_config, "consumer": validate_consumer_config}
"""Each SDK client's settings check, by the name ``add_client_properties`` is given."""


class CliError(Exception):
    """A failure the user can act on: printed as one line, exit status 1."""


class UsageError(CliError):
    """Arguments that do not fit together: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the problem (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def connection_options() -> argparse.ArgumentParser:
    """The options every command that talks to a broker shares (an argparse parent)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("connection")
    group.add_argument(
        "-b", "--bootstrap-servers", "--bootstrap-server", metavar="HOST:PORT[,...]",
        default=os.environ.get(BOOTSTRAP_ENV, DEFAULT_BOOTSTRAP),
        help=f"brokers to start from (default: ${BOOTSTRAP_ENV} or {DEFAULT_BOOTSTRAP})")
    group.add_argument(
        "--connect-timeout-ms", type=positive_int, default=5000, metavar="MS",
        help="give up when no broker answers within this time (default: 5000)")
    group.add_argument(
        "--command-config", type=command_config, default={}, metavar="FILE",
        help="a Kafka client properties file: security.protocol, sasl.mechanism, "
             "sasl.jaas.config, ssl.truststore.location, ssl.keystore.location, ...")
    group.add_argument("-v", "--verbose", action="store_true",
                       help="log the client's activity to stderr")
    return common


def add_command(commands: Any, name: str, handler: Handler, *, help: str, epilog: str,
                parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """A leaf command whose ``--help`` ends with examples, dispatching to ``handler``."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help, description=help[:1].upper() + help[1:] + ".", epilog=epilog,
        parents=parents, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(handler=handler)
    return parser


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (the value may contain ``=`` and may be empty)."""
    key, eq, value = text.partition("=")
    if not eq or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


def client_property(client: str) -> Callable[[str], tuple[str, Any]]:
    """The parser of ``-X fetch.max.bytes=1048576`` for a ``client`` (producer or consumer):
    a client setting, Java-style name, as kcat passes them.

    Each setting is checked by the client's own validation as it is parsed, so a typo or a
    bad value is a usage error in the spelling the user typed (``-X linger.mss=5``: "did
    you mean linger.ms?"), not in the SDK's underscored names.
    """
    validate = _VALIDATORS[client]

    def parse(text: str) -> tuple[str, Any]:
        key, raw = key_value(text)
        name, value = client_setting(key, raw)
        try:
            validate({name: value})
        except UnknownConfigError as exc:
            suggestion = exc.suggestion
            if suggestion is not None and "." in key:
                suggestion = property_name(suggestion)
            raise argparse.ArgumentTypeError(
                f"unknown {client} setting {key!r}"
                + (f": did you mean {suggestion}?" if suggestion else "")) from None
        except ConfigError as exc:
            message = str(exc).removeprefix(f"{exc.key}: ")
            raise argparse.ArgumentTypeError(
                f"{key if exc.key == name else exc.key}: {message}") from None
        return name, value

    parse.__name__ = f"{client} setting"  # argparse names the type in its messages
    return parse


def add_client_properties(parser: argparse.ArgumentParser, client: str) -> None:
    """``-X KEY=VALUE`` (repeatable), passed to the command's kafkalite ``client``."""
    parser.add_argument("-X", "--property", dest="client_properties",
                        type=client_property(client),
                        action="append", default=[], metavar="KEY=VALUE",
                        help=f"a {client} setting, e.g. fetch.max.bytes=1048576 or "
                             "fetch_max_bytes=1048576 (repeatable)")


def acks(text: str) -> int:
    """``all``, ``-1``, ``0`` or ``1``, as the producer's ``acks`` setting takes them."""
    values = {"all": -1, "-1": -1, "0": 0, "1": 1}
    if text not in values:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of all, -1, 0, 1")
    return values[text]


COMPRESSION_CHOICES = ("none", "gzip", "snappy", "lz4", "zstd")


def compression(text: str) -> str | None:
    if text not in COMPRESSION_CHOICES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one of {', '.join(COMPRESSION_CHOICES)}")
    return None if text == "none" else text
