"""A broker's memory when idle (issue 30, item 4): RSS figures, read from /proc.

- ``kafkalite-server idle``: ``python -m kafkalite_server start`` on an empty data dir, its
  RSS a few seconds after it listens (goal < 80 MB).
- ``EmbeddedCluster(1)``: a fresh interpreter's RSS, then after importing
  ``kafkalite_server``, then with a one-broker EmbeddedCluster running in it; the increment
  over the bare interpreter is the figure (goal < 60 MB). The import step shows how much
  of it is code rather than data. Then the same cluster once its log cleaner has compacted
  a topic (a cleaner that kept its offset map would hold ``log.cleaner.dedupe.buffer.size``,
  128 MiB, from its first pass on).
- The biggest modules that importing ``kafkalite_server`` loads, by the RSS each adds
  (``-X importtime`` names them; the RSS steps come from importing them one at a time).

    python -m benchmarks.memory [--settle 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

_EMBEDDED = """
import json, sys, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
bare = rss()
import kafkalite_server
imported = rss()
from kafkalite_server import EmbeddedCluster
from kafkalite import Producer
from kafkalite.admin import AdminClient, NewTopic
with EmbeddedCluster(1, config={"log.cleaner.backoff.ms": "100"}) as cluster:
    time.sleep(float(sys.argv[1]))
    running = rss()
    admin = AdminClient(bootstrap_servers=cluster.bootstrap_servers)
    admin.create_topics([NewTopic("table", 1, 1, config={
        "cleanup.policy": "compact", "segment.bytes": "4096",
        "min.cleanable.dirty.ratio": "0.01"})], wait_for_metadata=True)
    admin.close()
    producer = Producer(bootstrap_servers=cluster.bootstrap_servers, batch_size=1024)
    for n in range(2000):
        producer.send("table", key=b"%d" % (n % 50), value=b"v" * 100)
    producer.flush()
    producer.close()
    cleaner = cluster.brokers[0].log_manager.cleaner
    for _ in range(600):
        if cleaner.passes:
            break
        time.sleep(0.1)
    time.sleep(float(sys.argv[1]))
    cleaned = rss()
print(json.dumps({"bare": bare, "imported": imported, "running": running,
                  "cleaned": cleaned, "passes": cleaner.passes}))
"""

_MODULE_STEPS = """
import json, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
steps = []
before = rss()
for name in sys.argv[1:]:
    __import__(name)
    now = rss()
    steps.append((name, now - before))
    before = now
print(json.dumps(steps))
"""

CANDIDATES = ("asyncio", "ssl", "json", "hashlib", "crc32c", "kafkalite.protocol",
              "kafkalite.records", "kafkalite_server.log.manager",
              "kafkalite_server.cluster.active_controller", "kafkalite_server.group.coordinator",
              "kafkalite_server.txn.service", "kafkalite_server.broker", "kafkalite_server")
"""Imported in this order: each step's RSS is what it adds over the ones before."""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def idle_server(settle: float) -> float:
    with tempfile.TemporaryDirectory() as data:
        process = subprocess.Popen(
            [sys.executable, "-m", "kafkalite_server", "start", "--data-dir", data,
             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=ENV)
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("listening on "):
                    break
            time.sleep(settle)
            return rss_mb(process.pid)
        finally:
            process.terminate()
            process.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settle", type=float, default=3.0,
                        help="seconds to wait after start before reading RSS")
    args = parser.parse_args()
    print(f"{'kafkalite-server idle, RSS':<52} {idle_server(args.settle):7.1f} MB"
          f"   goal < 80 MB", flush=True)
    out = subprocess.run([sys.executable, "-c", _EMBEDDED, str(args.settle)], env=ENV,
                         capture_output=True, text=True, check=True).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    print(f"{'bare interpreter, RSS':<52} {figures['bare']:7.1f} MB")
    print(f"{'after import kafkalite_server (+ over bare)':<52} "
          f"{figures['imported'] - figures['bare']:7.1f} MB")
    print(f"{'one-broker EmbeddedCluster running (+ over bare)':<52} "
          f"{figures['running'] - figures['bare']:7.1f} MB   goal < 60 MB", flush=True)
    after = f"... after {figures['passes']} cleaner passes over a compacted topic"
    print(f"{after:<52} {figures['cleaned'] - figures['bare']:7.1f} MB", flush=True)
    out = subprocess.run([sys.executable, "-c", _MODULE_STEPS, *CANDIDATES], env=ENV,
                         capture_output=True, text=True, check=True).stdout
    print("RSS each import adds (in this order):")
    for name, added in json.loads(out.strip().splitlines()[-1]):
        print(f"  {name:<50} {added:7.1f} MB")


if __name__ == "__main__":
    main()
