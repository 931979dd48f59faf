"""The ``kafkalite`` entry point: parse, dispatch, and turn every failure into one line.

A user error (bad argument, unreachable broker, unknown topic, a broker's refusal) prints
``kafkalite: <reason>`` on stderr and exits non-zero; never a traceback. Set
``KAFKALITE_DEBUG=1`` to get the traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from kafkalite import __version__
from kafkalite.cli.commands import (
    acls,
    cluster,
    configs,
    console,
    consume,
    groups,
    metadata,
    partitions,
    perf,
    produce,
    topics,
)
from kafkalite.cli.options import USAGE_ERROR, CliError, Parser, UsageError, connection_options
from kafkalite.errors import KafkaError

PROG = "kafkalite"
EPILOG = """examples:
  kafkalite topics create events --partitions 3
  echo 'hello' | kafkalite produce events
  kafkalite consume events --from-beginning --max-messages 1
  kafkalite groups describe my-group
  kafkalite perf produce events --records 100000 --record-size 100

Every command takes -b/--bootstrap-servers (default $KAFKALITE_BOOTSTRAP_SERVERS or
localhost:9092); `kafkalite COMMAND --help` shows its options and examples."""


def build_parser() -> Parser:
    parser = Parser(prog=PROG, description="Kafka command-line tools for any Kafka broker.",
                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=Parser)
    parents = [connection_options()]
    for module in (produce, consume, topics, partitions, cluster, groups, acls, configs,
                   metadata, perf, console):
        module.register(commands, parents)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    try:
        code: int = args.handler(args)
        return code
    except UsageError as exc:
        return _fail(str(exc), USAGE_ERROR)
    except (CliError, KafkaError) as exc:
        return _fail(str(exc) or type(exc).__name__)
    except BrokenPipeError:  # `kafkalite consume ... | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        return _fail(f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug, but still one line unless asked for the traceback
        if os.environ.get("KAFKALITE_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} "
                     "(set KAFKALITE_DEBUG=1 for the traceback)")


def _fail(message: str, code: int = 1) -> int:
    first_line = message.strip().splitlines()[0] if message.strip() else "failed"
    print(f"{PROG}: {first_line}", file=sys.stderr)
    return code


def _configure_logging(verbose: bool) -> None:
    """The SDK logs retries and lost connections; the CLI reports failures itself."""
    if verbose:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    else:
        logging.getLogger("kafkalite").setLevel(logging.CRITICAL + 1)


if __name__ == "__main__":
    sys.exit(main())
