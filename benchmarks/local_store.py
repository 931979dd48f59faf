"""The local coordination store of a standalone broker (issue 31, item 1): is it ever the
bottleneck? Not run in CI; it prints its figures.

In one process, on a temporary directory of the machine's disk:

1. writes the nodes of ``--topics`` topics of ``--partitions`` partitions the way the
   controller and its requests write them (per topic: the assignment and configs in one
   batch, a config change notification, every partition state in one batch), timing the
   calls and counting the fsyncs;
2. lists the children of ``/brokers/topics`` (a node with ``--topics`` children) and of a
   partitions node, per call;
3. reopens the store from its journal, then (after a compaction at open) from a snapshot,
   timing each open: part of a standalone broker's restart.

    python -m benchmarks.local_store [--topics 2000] [--partitions 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.coordination import Create
from kafkalite_server.cluster.local_store import LocalEnsemble

LISTINGS = 1000


class CountedSync:
    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0

    def __call__(self, fd: int) -> None:
        started = time.perf_counter()
        os.fsync(fd)
        self.calls += 1
        self.seconds += time.perf_counter() - started


def write_topics(store: LocalEnsemble, topics: int, partitions: int) -> None:
    client = store.connect()
    for path in (*layout.PERSISTENT_PATHS, layout.CONFIG_CHANGES):
        client.ensure_path(path)
    for index in range(topics):
        topic = f"topic-{index:05d}"
        client.commit([
            Create(layout.topic_config_path(topic), layout.encode_topic_config({})),
            Create(layout.topic_path(topic),
                   layout.encode_assignment({p: [0] for p in range(partitions)}))])
        client.create(layout.CONFIG_CHANGE_PREFIX,
                      layout.encode_config_change(layout.topic_config_entity(topic)),
                      sequential=True)
        client.commit([Create(layout.partitions_path(topic))]
                      + [Create(layout.partition_path(topic, p)) for p in range(partitions)]
                      + [Create(layout.partition_state_path(topic, p),
                                layout.LeaderIsr(0, 0, (0,), 1).encode())
                         for p in range(partitions)])


def per_call_us(action: object, calls: int = LISTINGS) -> float:
    assert callable(action)
    started = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="local-store-") as root:
        directory = Path(root) / "store"
        sync = CountedSync()
        store = LocalEnsemble.open(directory, fsync=sync, compact_bytes=1 << 40)
        started = time.perf_counter()
        write_topics(store, args.topics, args.partitions)
        elapsed = time.perf_counter() - started
        print(f"{args.topics} topics x {args.partitions} partitions, as the controller "
              "writes them")
        print(f"  write                      {elapsed:8.2f} s   {sync.calls} fsyncs taking "
              f"{sync.seconds:.2f} s ({sync.seconds / sync.calls * 1000:.2f} ms each)")
        client = store.connect()
        first = layout.partitions_path("topic-00000")
        topics_us = per_call_us(lambda: client.children(layout.TOPICS))
        print(f"  children of {layout.TOPICS:16} {topics_us:8.1f} us a call")
        print(f"  children of a partitions   "
              f"{per_call_us(lambda: client.children(first)):8.1f} us a call")
        store.close()
        journal = sum(p.stat().st_size for p in directory.glob("journal-*"))
        started = time.perf_counter()
        store = LocalEnsemble.open(directory)
        print(f"  open from the journal      {time.perf_counter() - started:8.2f} s   "
              f"({journal / 1e6:.1f} MB)")
        store.close()
        LocalEnsemble.open(directory, compact_bytes=1).close()  # folds the journal at open
        started = time.perf_counter()
        LocalEnsemble.open(directory).close()
        snapshot = (directory / "snapshot").stat().st_size
        print(f"  open from a snapshot       {time.perf_counter() - started:8.2f} s   "
              f"({snapshot / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
