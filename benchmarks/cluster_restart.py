"""A three-process cluster with thousands of partitions: how long a new producer waits for
one record to every partition, on the fresh cluster and after the whole cluster was
SIGKILLed and restarted (issue 36's "slow after a full-cluster restart").

Three ``python -m kafkalite_server start`` processes over Debian's ZooKeeper (the helpers
of ``benchmarks.cluster``) get ``--topics`` topics of ``--partitions`` partitions, replication
factor 3. A confluent-kafka producer (acks=all, its default) then sends one record to
every partition; the figures are the times from its first send to the median and to the
last acknowledgement. All three brokers are then SIGKILLed and started again at once; the
same figures are taken for a new producer, from the moment of the restart (which includes
each broker waiting for its previous ZooKeeper session to expire before registering).

    python -m benchmarks.cluster_restart [--topics 60] [--partitions 30] [--write-docs]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks import cluster as cluster_bench
from benchmarks.report import add_write_docs, documented

CREATE_BATCH = 20
ACK_WAIT_S = 300.0


def _produce_everywhere(bootstrap: str, topics: int, partitions: int,
                        since: float) -> list[float]:
    """Seconds from ``since`` to each partition's acknowledgement, sorted."""
    acked: list[float] = []
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is None:
            acked.append(time.monotonic() - since)
        else:
            failed.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "message.timeout.ms": int(ACK_WAIT_S * 1000)})
    for topic in range(topics):
        for partition in range(partitions):
            producer.produce(f"t{topic}", b"x", partition=partition, on_delivery=delivered)
    deadline = time.monotonic() + ACK_WAIT_S
    while len(acked) + len(failed) < topics * partitions and time.monotonic() < deadline:
        producer.poll(0.1)
    if failed or len(acked) < topics * partitions:
        raise RuntimeError(f"{len(acked)} acknowledged, {len(failed)} failed: {failed[:3]}")
    return sorted(acked)


def _line(what: str, times: list[float]) -> str:
    return (f"{what}: median {times[len(times) // 2]:.1f} s, last {times[-1]:.1f} s "
            f"({len(times)} partitions)")


def run(topics: int, partitions: int) -> None:
    with tempfile.TemporaryDirectory(prefix="kafkalite-restart-") as root, \
            cluster_bench.cluster(Path(root)) as brokers:
        bootstrap = ",".join(b.bootstrap_servers for b in brokers.values())
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for first in range(0, topics, CREATE_BATCH):
            created = admin.create_topics([NewTopic(f"t{t}", partitions, 3) for t in
                                           range(first, min(topics, first + CREATE_BATCH))])
            for future in created.values():
                future.result(120)
        print(f"{topics * partitions} partitions, replication factor 3, on three brokers",
              flush=True)
        print(_line("one record to each partition, fresh cluster",
                    _produce_everywhere(bootstrap, topics, partitions, time.monotonic())),
              flush=True)
        for broker in brokers.values():
            broker.kill()
        restarted = time.monotonic()
        starts = [threading.Thread(target=broker.start, kwargs={"timeout": ACK_WAIT_S})
                  for broker in brokers.values()]
        for thread in starts:
            thread.start()
        for thread in starts:
            thread.join()
        print(f"all three listening {time.monotonic() - restarted:.1f} s after the restart",
              flush=True)
        bootstrap = ",".join(b.bootstrap_servers for b in brokers.values())
        print(_line("one record to each partition, from the SIGKILL restart",
                    _produce_everywhere(bootstrap, topics, partitions, restarted)),
              flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cluster_restart",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=60)
    parser.add_argument("--partitions", type=int, default=30)
    add_write_docs(parser)
    args = parser.parse_args(argv)
    cluster_bench.WAIT_S = ACK_WAIT_S
    with documented("benchmarks.cluster_restart", args.write_docs, argv):
        run(args.topics, args.partitions)


if __name__ == "__main__":
    main(sys.argv[1:])
