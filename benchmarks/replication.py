"""Replication cost: produce throughput and latency with RF=3 acks=all against RF=1 acks=1,
on one three-process kafkalite cluster over a real ZooKeeper, in the same run.

Three ``python -m kafkalite_server start`` processes join a standalone ZooKeeper (Debian's
package, as the cluster tests use). Two one-partition topics are created: ``rf3``
(replication factor 3, ``min.insync.replicas=2``) and ``rf1`` (replication factor 1).
confluent-kafka produces the same incompressible records, ``linger.ms=5``: acks=1 to
``rf1`` (the baseline), acks=all with and without idempotence to ``rf3``, and idempotent
acks=all to ``rf1`` (what idempotence costs without replication). Each case's producer
first delivers one warm-up record (connections, metadata and, for idempotence, the
producer id: 50-500 ms that would otherwise be part of a sub-second run); throughput then
runs from the first ``produce()`` to the end of ``flush()``; latency is each record's time
from ``produce()`` to its delivery callback. The brokers' CPU time per MB produced (all
three processes, from ``/proc``) is printed too: on a shared machine it is steadier than
throughput. The cases alternate (rf1, rf3, rf1, ...) and the best throughput of each is
reported, with the latency percentiles of that run.

    python -m benchmarks.replication [--megabytes 64] [--size 1024] [--repeat 3]
                                     [--cases rf1 rf3-plain ...] [--profile DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests" / "cluster"))
from zookeeper_server import ZooKeeperServer  # noqa: E402

from benchmarks.broker import cpu_seconds  # noqa: E402
from benchmarks.report import add_write_docs, documented  # noqa: E402

MB = 1 << 20
BROKERS = (1, 2, 3)


@contextlib.contextmanager
def cluster(root: Path, connect: str, profile: Path | None
            ) -> Iterator[tuple[str, list[int]]]:
    """Bootstrap servers and process ids of three brokers; with ``profile`` (a directory),
    each broker runs under pyinstrument and writes ``broker-<id>.txt`` there when it
    stops."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    processes = []
    addresses = []
    try:
        for broker_id in BROKERS:
            profiler = ([] if profile is None else
                        ["-m", "pyinstrument", "-o", str(profile / f"broker-{broker_id}.txt")])
            process = subprocess.Popen(
                [sys.executable, *profiler, "-m", "kafkalite_server", "start", "--port", "0",
                 "--data-dir", str(root / f"broker-{broker_id}"),
                 "--set", f"broker.id={broker_id}", "--set", f"zookeeper.connect={connect}",
                 "--set", "zookeeper.session.timeout.ms=6000"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
            processes.append(process)
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("listening on "):
                    addresses.append(line.split()[2])
                    break
            else:
                raise RuntimeError(f"broker {broker_id} did not start")
            threading.Thread(target=process.stdout.read, daemon=True).start()
        yield ",".join(addresses), [process.pid for process in processes]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(60)


def create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([
        NewTopic("rf3", 1, 3, config={"min.insync.replicas": "2"}),
        NewTopic("rf1", 1, 1)])
    for future in futures.values():
        future.result(30)
    time.sleep(2)  # leaders elected and followers fetching


def produce(bootstrap: str, topic: str, values: list[bytes],
            settings: dict[str, object]) -> tuple[float, list[float]]:
    """(MB/s of values, latencies in ms)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **settings})
    producer.produce(topic, values[0])  # connected, leader known, producer id assigned
    if producer.flush(30):
        raise RuntimeError(f"{topic}: the warm-up record was not delivered")
    latencies: list[float] = []
    failures: list[object] = []

    def delivered(err: object, _msg: object, sent: float) -> None:
        if err is not None:
            failures.append(err)
        latencies.append((time.perf_counter() - sent) * 1000)
    start = time.perf_counter()
    for value in values:
        sent = time.perf_counter()
        while True:
            try:
                producer.produce(topic, value,
                                 on_delivery=functools.partial(delivered, sent=sent))
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(300):
        raise RuntimeError(f"{topic}: records still undelivered")
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{topic}: {len(failures)} failed, first {failures[0]}")
    return len(values) * len(values[0]) / MB / elapsed, latencies


IDEMPOTENT = {"acks": "all", "enable.idempotence": True}
CASES: dict[str, tuple[str, str, dict[str, object]]] = {
    "rf1": ("rf1", "RF=1 acks=1              ", {"acks": 1}),
    "rf1-idempotent": ("rf1", "RF=1 acks=all idempotent  ", IDEMPOTENT),
    "rf3-plain": ("rf3", "RF=3 acks=all             ", {"acks": "all"}),
    "rf3": ("rf3", "RF=3 acks=all idempotent  ", IDEMPOTENT)}
"""Case name: (topic, label, producer settings)."""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES),
                        help="which cases to run (all by default)")
    parser.add_argument("--profile", type=Path,
                        help="a directory for the brokers' pyinstrument reports")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    with documented("benchmarks.replication", args.write_docs):
        count = args.megabytes * MB // args.size
        if args.profile is not None:
            args.profile.mkdir(parents=True, exist_ok=True)
        values = [os.urandom(args.size) for _ in range(1024)]
        records = [values[i % len(values)] for i in range(count)]
        best: dict[str, tuple[float, list[float], float]] = {}
        with tempfile.TemporaryDirectory(prefix="kafkalite-replication-") as scratch:
            root = Path(scratch)
            zookeeper = ZooKeeperServer(root / "zookeeper").start()
            try:
                with cluster(root, zookeeper.connect + "/bench", args.profile) as (bootstrap, pids):
                    create_topics(bootstrap)
                    for _ in range(args.repeat):
                        for case in args.cases:
                            topic, _name, settings = CASES[case]
                            cpu = sum(cpu_seconds(pid) for pid in pids)
                            rate, latencies = produce(bootstrap, topic, records, settings)
                            cpu = sum(cpu_seconds(pid) for pid in pids) - cpu
                            if case not in best or rate > best[case][0]:
                                best[case] = (rate, latencies, cpu * 1000 / args.megabytes)
            finally:
                zookeeper.stop()
        for case in args.cases:
            rate, latencies, cpu_per_mb = best[case]
            print(f"{CASES[case][1]}  {rate:7.1f} MB/s  {rate * MB / args.size:9.0f} records/s  "
                  f"p50 {percentile(latencies, 0.5):7.1f} ms  p99 {percentile(latencies, 0.99):7.1f} ms"
                  f"  brokers' CPU {cpu_per_mb:5.1f} ms/MB")
        if "rf1" in best:
            for case in ("rf3", "rf3-plain"):
                if case in best:
                    print(f"{CASES[case][1].strip()} / RF=1 acks=1: "
                          f"{best[case][0] / best['rf1'][0]:.0%}")


if __name__ == "__main__":
    main()
