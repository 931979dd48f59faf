"""Reassignment throughput: how fast an unthrottled partition reassignment copies a log to
a new replica, against plain replication, on one three-process kafkalite cluster over a
real ZooKeeper (the cluster of :mod:`benchmarks.replication`).

Plain replication is the acks=all produce rate to a topic with two replicas: every byte is
appended by the leader and fetched by the in-sync follower before it is acknowledged.
The reassignment first fills a one-replica topic on broker 1 (acks=1), then moves it to
brokers 1 and 2 (AlterPartitionReassignments) and times it from the request until
ListPartitionReassignments no longer lists it: the new replica fetches the whole log from
the leader, joins the ISR, and the controller completes the move. Both lines are MB/s of
record values (64 KB incompressible records).

    python -m benchmarks.reassignment [--megabytes 64]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests" / "cluster"))
from zookeeper_server import ZooKeeperServer  # noqa: E402

from benchmarks.confluent_load import produce_all  # noqa: E402
from benchmarks.replication import cluster  # noqa: E402
from benchmarks.report import add_write_docs, documented  # noqa: E402
from kafkalite.admin import AdminClient, NewTopic  # noqa: E402
from kafkalite.structs import TopicPartition  # noqa: E402

MB = 1 << 20
RECORD_SIZE = 64 * 1024


def produce(bootstrap: str, topic: str, total: int, acks: str) -> float:
    """MB/s of record values, from the first send to the last acknowledgement."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5})
    count = max(1, total // RECORD_SIZE)
    return count * RECORD_SIZE / MB / produce_all(producer, topic, [os.urandom(RECORD_SIZE)],
                                                  count)


def reassign(admin: AdminClient, partition: TopicPartition, replicas: list[int],
             timeout: float = 600) -> float:
    """Seconds from the request until the move is no longer listed."""
    started = time.perf_counter()
    outcome = admin.alter_partition_reassignments({partition: replicas})
    if outcome[partition] is not None:
        raise RuntimeError(f"reassignment refused: {outcome[partition]}")
    deadline = started + timeout
    while admin.list_partition_reassignments([partition]):
        if time.perf_counter() > deadline:
            raise RuntimeError("the reassignment did not complete")
        time.sleep(0.02)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=64, help="records per case (64)")
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.reassignment", args.write_docs):
        run(args)


def run(args: argparse.Namespace) -> None:
    total = args.megabytes * MB
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        zookeeper = ZooKeeperServer(root / "zookeeper").start()
        try:
            with cluster(root, zookeeper.connect, None) as (bootstrap, _pids), \
                    AdminClient(bootstrap) as admin:
                admin.create_topics([
                    NewTopic("plain", replica_assignments={0: [1, 2]}),
                    NewTopic("moved", replica_assignments={0: [1]})], wait_for_metadata=True)
                time.sleep(2)  # the follower of "plain" is fetching
                plain = produce(bootstrap, "plain", total, "all")
                produce(bootstrap, "moved", total, "1")
                seconds = reassign(admin, TopicPartition("moved", 0), [1, 2])
                print(f"plain replication (acks=all, RF=2)   {plain:7.2f} MB/s")
                print(f"reassignment, unthrottled (1 -> 1,2) {args.megabytes / seconds:7.2f} MB/s"
                      f"  ({args.megabytes} MB in {seconds:.2f} s)")
        finally:
            zookeeper.stop()


if __name__ == "__main__":
    main()
