"""``kafkalite console``: serve the web console (kafkalite.console) over a cluster."""

from __future__ import annotations

import argparse
from typing import Any

from kafkalite.cli.options import CliError, add_command, positive_int
from kafkalite.cli.session import client_config, cluster_metadata

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080

EPILOG = """examples:
  kafkalite console -b localhost:9092                       # http://127.0.0.1:8080
  kafkalite console -b broker:9093 --command-config client.properties --port 9000
  kafkalite console -b localhost:9092 --allow-writes        # may produce test records
  kafkalite console -b localhost:9092 --metrics-url http://localhost:9404/metrics

Pages: overview (brokers, controller, under-replicated and offline partitions), topics
(partitions, leader, replicas, ISR, sizes, configs), a topic's message browser, groups
(members, assignments, lag, a live lag chart) and throughput (a live chart; bytes in and
out too from the brokers' metrics endpoints given with --metrics-url). Read-only unless
--allow-writes, which adds one write: producing a test record to a topic. Binds 127.0.0.1
unless --host says otherwise; it has no login of its own, so expose it only behind
something that has one. Needs the console extra: pip install 'kafkalite[console]'."""


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    console = add_command(commands, "console", run,
                          help="serve a web console over the cluster", epilog=EPILOG,
                          parents=parents)
    console.add_argument("--host", default=DEFAULT_HOST,
                         help=f"address to listen on (default: {DEFAULT_HOST})")
    console.add_argument("--port", type=tcp_port, default=DEFAULT_PORT,
                         help=f"port to listen on (default: {DEFAULT_PORT})")
    console.add_argument("--allow-writes", action="store_true",
                         help="allow producing a test record from a topic's page")
    console.add_argument("--metrics-url", action="append", default=[], metavar="URL",
                         help="a broker's Prometheus endpoint, e.g. http://broker-1:9404/"
                              "metrics (repeatable): the throughput page charts bytes in "
                              "and out from them")


def tcp_port(text: str) -> int:
    port = positive_int(text)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (1-65535)")
    return port


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from kafkalite.console import BrokerMetrics, ClusterReader, create_app
        from kafkalite.console.app import LOOPBACK_HOSTS

        metrics = BrokerMetrics(args.metrics_url) if args.metrics_url else None
    except ImportError as exc:
        raise CliError(f"the console needs {exc.name}: pip install 'kafkalite[console]'"
                       ) from None
    cluster_metadata(args, [])  # an unreachable cluster is one line, not a page of errors
    reader = ClusterReader({**client_config(args), "client_id": "kafkalite-console"})
    try:
        print(f"kafkalite console on http://{args.host}:{args.port} "
              f"({'writes allowed' if args.allow_writes else 'read-only'}); Ctrl-C stops",
              flush=True)
        # On a loopback address only loopback Host headers (DNS rebinding); elsewhere the
        # operator who exposed it decides who may reach it.
        hosts = LOOPBACK_HOSTS if args.host in LOOPBACK_HOSTS else None
        uvicorn.run(create_app(reader, allow_writes=args.allow_writes, metrics=metrics,
                               allowed_hosts=hosts),
                    host=args.host, port=args.port, log_level="warning")
    finally:
        reader.close()
    return 0
