"""The main job: start a kafkalite cluster in this process and run the toolkit end to end.

``python -m kafkalite_demo`` (or ``tox -e demo``) starts a replicating 3-broker
EmbeddedCluster (replication factor 3, min.insync.replicas=2), produces a clickstream keyed
by user through a custom partitioner, consumes it back with a consumer group, runs the Spark
job when PySpark is installed, then kills a broker in the middle of an acks=all stream and
shows that the leaders move, the ISR shrinks, and every acknowledged record is still there.
It prints a report with timings and draws a picture (records per partition, leaders before
and after the kill) when matplotlib is installed. Progress goes to stderr: bars on a
terminal, a plain line every few seconds in a log file.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from kafkalite_demo.clickstream import PARTITIONS, TOPIC, consume_with_group, produce
from kafkalite_demo.crash import (
    MIN_INSYNC_REPLICAS,
    REPLICATION_FACTOR,
    LeaderMoves,
    survive_a_crash,
)
from kafkalite_demo.picture import draw
from kafkalite_demo.report import Report
from kafkalite_server import EmbeddedCluster

DEFAULT_PICTURE = Path(tempfile.gettempdir()) / "kafkalite-demo.png"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kafkalite_demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000,
                        help="clickstream events to produce")
    parser.add_argument("--users", type=int, default=50_000, help="distinct users")
    parser.add_argument("--members", type=int, default=3, help="consumer group members")
    parser.add_argument("--orders", type=int, default=20_000,
                        help="acks=all records produced around the broker crash")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark step")
    parser.add_argument("--plot", type=Path, default=DEFAULT_PICTURE, metavar="FILE.png",
                        help=f"where to draw the picture (default: {DEFAULT_PICTURE})")
    parser.add_argument("--no-plot", dest="plot", action="store_const", const=None,
                        help="draw no picture")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = Report()
    per_partition: Counter[int] = Counter()
    moves: LeaderMoves | None = None
    with report.step("start a replicating 3-broker cluster") as notes:
        cluster = EmbeddedCluster(num_brokers=3, config={
            "num.partitions": str(PARTITIONS),
            "default.replication.factor": str(REPLICATION_FACTOR),
            "min.insync.replicas": str(MIN_INSYNC_REPLICAS),
            # Kafka's default is 3000 ms; one second is enough for every member to make
            # the first generation, so the group starts balanced.
            "group.initial.rebalance.delay.ms": "1000",
            "controlled.shutdown.retry.backoff.ms": "100"})
        cluster.start()
        notes.append(f"bootstrap servers {cluster.bootstrap_servers}; controller is broker "
                     f"{cluster.controller_id}")
    try:
        bootstrap = cluster.bootstrap_servers
        with report.step("produce the clickstream") as notes:
            per_partition = produce(bootstrap, args.events, args.users, notes)
        with report.step("consume it with a consumer group") as notes:
            consume_with_group(bootstrap, args.events, args.members, notes)
        if not args.no_spark:
            with report.step("Spark: read, aggregate, group consumers") as notes:
                run_spark(bootstrap, notes)
        with report.step("kill a broker while producing acks=all") as notes:
            moves = survive_a_crash(cluster, args.orders, notes)
    finally:
        with report.step("stop the cluster") as notes:
            cluster.stop()
            notes.append("clean shutdown")
    if args.plot is not None:
        with report.step("draw the picture") as notes:
            draw_picture(args.plot, per_partition, moves, notes)
    report.print()
    return 0


def run_spark(bootstrap: str, notes: list[str]) -> None:
    try:
        import pyspark  # noqa: F401  (the optional "spark" extra)
    except ImportError:
        notes.append("skipped: PySpark is not installed (pip install '.[spark]')")
        return
    from kafkalite.spark import demo_job

    # Everything runs on loopback; this spares Spark a hostname lookup and its warning.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    result: dict[str, Any] = demo_job(bootstrap, TOPIC, show_progress=True)
    for key, value in result.items():
        notes.append(f"{key}: {value}")


def draw_picture(path: Path, per_partition: Counter[int], moves: LeaderMoves | None,
                 notes: list[str]) -> None:
    try:
        draw(path, per_partition, moves)
    except ImportError:
        notes.append("skipped: matplotlib is not installed (pip install '.[plot]')")
        return
    notes.append(f"picture: {path.resolve()} (records per partition; leaders before and "
                 "after the kill)")
