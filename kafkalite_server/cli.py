"""``kafkalite-server``: run a broker, or dump log segments and indexes.

    kafkalite-server start --data-dir DIR [--host H] [--port P] [--broker-id N]
                           [--listeners L] [--advertised-listeners L]
                           [--config FILE.properties] [--set KEY=VALUE ...]
    kafkalite-server scram-user --data-dir DIR --user NAME --password SECRET
                           [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N]
                           [--config FILE.properties] [--set KEY=VALUE ...]
    kafkalite-server dump-log PATH [--deep-iteration] [--index]
    kafkalite-server --version

``--set`` overrides the file, and the flags override both. Unless ``log.dirs`` is set,
the data dir is the log dir. Bad flags or config: one line naming the problem, exit 2.
With ``zookeeper.connect`` set the broker joins that cluster (``broker.id`` must be unique
in it); without, it is a one-broker cluster over the coordination store it keeps in
``<data dir>/cluster-metadata/``, and runs the controller itself.

``--host``/``--port`` are a shorthand for one PLAINTEXT listener; ``--listeners`` sets
Kafka's ``listeners`` (``SASL_SSL://0.0.0.0:9094,PLAINTEXT://127.0.0.1:9092``). The start
line ``listening on host:port`` names the inter-broker listener; one ``listener NAME
(PROTOCOL) on host:port`` line follows per listener. ``scram-user`` stores a SCRAM
credential (salted and iterated, never the password) in the coordination store of that
data dir (or of the ZooKeeper cluster of ``zookeeper.connect``), to bootstrap the first
user before the broker starts; a running broker takes users through
AlterUserScramCredentials.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from kafkalite import __version__
from kafkalite.errors import ConfigError, KafkaError
from kafkalite.protocol.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential
from kafkalite_server.config import BrokerConfig, read_properties
from kafkalite_server.launch import coordination_session, launch_broker
from kafkalite_server.log.dump import dump_index, dump_log
from kafkalite_server.log.open_files import raise_open_files_limit
from kafkalite_server.security.security_store import SecurityStore

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkalite-server", description="A Kafka-compatible broker.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    start = commands.add_parser("start", help="run a broker until SIGTERM/SIGINT")
    start.add_argument("--data-dir", required=True, type=Path)
    start.add_argument("--host")
    start.add_argument("--port", type=int)
    start.add_argument("--broker-id", type=int)
    start.add_argument("--listeners", help="Kafka's listeners, NAME://host:port,...")
    start.add_argument("--advertised-listeners", help="Kafka's advertised.listeners")
    start.add_argument("--config", type=Path, help="a Java .properties file of broker keys")
    start.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="a broker config key (repeatable)")
    scram = commands.add_parser("scram-user", help="store a SCRAM credential for a user")
    scram.add_argument("--data-dir", required=True, type=Path)
    scram.add_argument("--user", required=True)
    scram.add_argument("--password", required=True)
    scram.add_argument("--mechanism", default="SCRAM-SHA-256",
                       choices=("SCRAM-SHA-256", "SCRAM-SHA-512"))
    scram.add_argument("--iterations", type=int, default=MIN_ITERATIONS)
    scram.add_argument("--config", type=Path, help="a Java .properties file of broker keys")
    scram.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    dump = commands.add_parser("dump-log", help="print a segment (.log) or index file")
    dump.add_argument("path", type=Path)
    dump.add_argument("--deep-iteration", action="store_true",
                      help="print every record, not only batch headers")
    dump.add_argument("--index", action="store_true", help="the path is an index file")
    return parser


def broker_settings(args: argparse.Namespace) -> dict[str, str]:
    """File, then --set, then flags; log.dirs defaults to the data dir."""
    settings = read_properties(args.config) if args.config else {}
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(item, "--set needs KEY=VALUE")
        settings[key.strip()] = value.strip()
    flags = {"host.name": getattr(args, "host", None), "port": getattr(args, "port", None),
             "broker.id": getattr(args, "broker_id", None),
             "listeners": getattr(args, "listeners", None),
             "advertised.listeners": getattr(args, "advertised_listeners", None)}
    settings.update({key: str(value) for key, value in flags.items() if value is not None})
    if "log.dirs" not in settings and "log.dir" not in settings:
        settings["log.dirs"] = str(args.data_dir)
    return settings


async def serve(config: BrokerConfig, data_dir: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    broker = await launch_broker(config, data_dir)
    endpoint = broker.endpoint
    inter = broker.listeners.inter_broker
    print(f"listening on {inter.host or '0.0.0.0'}:{broker.port} "
          f"(advertised {endpoint.host}:{endpoint.port}, broker.id {config.broker_id})",
          flush=True)
    for listener in broker.listeners.listeners:
        print(f"listener {listener.name} ({listener.protocol}) on "
              f"{listener.host or '0.0.0.0'}:{broker.listeners.ports[listener.name]}",
              flush=True)
    try:
        await stop.wait()
    finally:
        await broker.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "dump-log":
        try:
            ok = dump_index(args.path) if args.index else dump_log(args.path,
                                                                   args.deep_iteration)
        except OSError as exc:
            print(f"kafkalite-server: {exc}", file=sys.stderr)
            return 1
        return 0 if ok else 1
    if args.command == "scram-user":
        return _scram_user(args)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = BrokerConfig.from_properties(broker_settings(args))
        args.data_dir.mkdir(parents=True, exist_ok=True)
        raise_open_files_limit()
        asyncio.run(serve(config, args.data_dir))
    except ConfigError as exc:
        print(f"kafkalite-server: config error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except (KafkaError, OSError) as exc:
        print(f"kafkalite-server: {exc}", file=sys.stderr)
        return 1
    return 0


def _scram_user(args: argparse.Namespace) -> int:
    try:
        if not MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:
            raise ConfigError("--iterations", f"must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}]")
        config = BrokerConfig.from_properties(broker_settings(args))
        credential = ScramCredential.from_password(args.mechanism, args.password,
                                                   args.iterations)
        with coordination_session(config, args.data_dir) as session:
            SecurityStore(lambda: session).alter_credentials(
                [(args.user, args.mechanism, credential)], [])
    except ConfigError as exc:
        print(f"kafkalite-server: config error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except (KafkaError, OSError) as exc:
        print(f"kafkalite-server: {exc}", file=sys.stderr)
        return 1
    print(f"stored {args.mechanism} credential for {args.user} "
          f"({args.iterations} iterations)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
