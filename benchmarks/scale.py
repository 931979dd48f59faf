"""How many partitions and segments one broker holds: 10,000 partitions under 4,096
descriptors (issue 30, item 3). Not run in CI; it prints its figures.

One ``python -m kafkalite_server start`` process runs with RLIMIT_NOFILE 4096 (soft and
hard; ``kafkalite.log.open.files.max`` is then 2048 by default). Over the raw protocol
(one connection, no client library in the way) the benchmark:

1. creates 2,000 topics of 5 partitions (``segment.bytes`` 1000), 100 topics a
   CreateTopics request, and waits until Metadata shows every partition led;
2. writes one 600-byte batch to every partition, three times (Produce requests of 500
   partitions): each batch fills a segment, so every partition ends with 3 segments
   (30,000 segments, 90,000 segment files);
3. times Metadata for all topics, and a Fetch from offset 0 of every partition;
4. kills the broker (SIGKILL, right after the writes: nothing was flushed, so every
   segment is recovered) and restarts it, timing start to "every partition answers a
   Fetch of its first batch"; then the same after a clean stop (SIGTERM).

Throughout, a sampler reads the broker's RSS and open descriptors from ``/proc`` every
0.2 s; the maxima are printed. Goals (the issue's): creation < 60 s, restart < 15 s
(< 30 s after SIGKILL), < 1 descriptor per partition, < 500 MB RSS, Metadata < 1 s.

    python -m benchmarks.scale [--topics 2000] [--partitions 5] [--nofile 4096]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalite.protocol import ApiKey, decode_response, encode_request

REPO_ROOT = Path(__file__).resolve().parent.parent
SEGMENT_BYTES = 1000
VALUE = b"v" * 520  # one record: a ~600-byte batch, one segment each
SEGMENTS = 3
TOPICS_PER_CREATE = 100
PARTITIONS_PER_REQUEST = 500
WAIT_S = 600.0


class Wire:
    """One blocking connection speaking the Kafka protocol."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        self.correlation = 0

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.correlation += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation, "scale", body))
        size = struct.unpack(">i", self._read(4))[0]
        correlation, response = decode_response(api_key, version, self._read(size))
        assert correlation == self.correlation
        return response

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(min(size - len(data), 1 << 20))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


class Broker:
    """The broker process, under an RLIMIT_NOFILE it cannot raise."""

    def __init__(self, data_dir: Path, nofile: int) -> None:
        self.data_dir = data_dir
        self.nofile = nofile
        self.process: subprocess.Popen[str] | None = None
        self.port = 0
        self.log_path = data_dir.with_name("broker.log")

    def start(self) -> float:
        """Start; returns the seconds until it printed ``listening on``."""
        args = [sys.executable, "-m", "kafkalite_server", "start", "--data-dir",
                str(self.data_dir), "--port", str(self.port),
                "--set", "num.partitions=1"]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        limit = self.nofile
        started = time.monotonic()
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                args, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("listening on "):
                self.port = int(line.split()[2].rsplit(":", 1)[1])
                threading.Thread(target=self.process.stdout.read, daemon=True).start()
                return time.monotonic() - started
        raise SystemExit(f"the broker did not start; see {self.log_path}")

    def stop(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)
        self.process.wait(WAIT_S)
        self.process = None


class Sampler:
    """The broker's peak RSS and descriptor count, read from /proc every 0.2 s."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.peak_rss_mb = 0.0
        self.peak_fds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self) -> tuple[float, int]:
        """(RSS MB, open descriptors) now; (0, 0) when no broker runs."""
        pid = self.pid
        if pid is None:
            return 0.0, 0
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            rss_kb = int(next(line.split()[1] for line in status.splitlines()
                              if line.startswith("VmRSS:")))
            fds = len(os.listdir(f"/proc/{pid}/fd"))
        except (OSError, StopIteration):
            return 0.0, 0
        return rss_kb / 1024, fds

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            rss, fds = self.sample()
            self.peak_rss_mb = max(self.peak_rss_mb, rss)
            self.peak_fds = max(self.peak_fds, fds)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _batch() -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    builder.append(0, timestamp=int(time.time() * 1000), key=None, value=VALUE, headers=[])
    return bytes(builder.build())


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def create_topics(wire: Wire, names: list[str], partitions: int) -> None:
    for chunk in _chunks(names, TOPICS_PER_CREATE):
        body = {"topics": [{"name": name, "num_partitions": partitions,
                            "replication_factor": 1, "assignments": [],
                            "configs": [{"name": "segment.bytes",
                                         "value": str(SEGMENT_BYTES)}]}
                           for name in chunk],
                "timeout_ms": int(WAIT_S * 1000), "validate_only": False}
        for topic in wire.call(ApiKey.CREATE_TOPICS, 4, body)["topics"]:
            if topic["error_code"]:
                raise SystemExit(f"CreateTopics {topic['name']}: error {topic['error_code']}")


def metadata(wire: Wire) -> dict[str, Any]:
    return wire.call(ApiKey.METADATA, 8, {"topics": None, "allow_auto_topic_creation": False})


def led_partitions(wire: Wire, names: set[str]) -> int:
    return sum(1 for topic in metadata(wire)["topics"] if topic["name"] in names
               for p in topic["partitions"] if p["error_code"] == 0 and p["leader_id"] >= 0)


def produce_everywhere(wire: Wire, partitions: list[tuple[str, int]], batch: bytes) -> None:
    for chunk in _chunks(partitions, PARTITIONS_PER_REQUEST):
        by_topic: dict[str, list[int]] = {}
        for name, index in chunk:
            by_topic.setdefault(name, []).append(index)
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 30_000,
                "topic_data": [{"name": name, "partition_data": [
                    {"index": index, "records": batch} for index in indexes]}
                    for name, indexes in by_topic.items()]}
        for topic in wire.call(ApiKey.PRODUCE, 8, body)["responses"]:
            for p in topic["partition_responses"]:
                if p["error_code"]:
                    raise SystemExit(f"Produce {topic['name']}-{p['index']}: error "
                                     f"{p['error_code']} {p.get('error_message')}")


def fetch_first_batches(wire: Wire, partitions: list[tuple[str, int]]) -> int:
    """Fetch offset 0 of every partition; returns how many answered with records."""
    served = 0
    for chunk in _chunks(partitions, PARTITIONS_PER_REQUEST):
        by_topic: dict[str, list[int]] = {}
        for name, index in chunk:
            by_topic.setdefault(name, []).append(index)
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 64 << 20,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic": name, "partitions": [
                    {"partition": index, "current_leader_epoch": -1, "fetch_offset": 0,
                     "log_start_offset": -1, "partition_max_bytes": 1024}
                    for index in indexes]} for name, indexes in by_topic.items()]}
        for topic in wire.call(ApiKey.FETCH, 11, body)["responses"]:
            served += sum(1 for p in topic["partitions"]
                          if p["error_code"] == 0 and p["records"])
    return served


def wait_until_serving(broker: Broker, partitions: list[tuple[str, int]]) -> float:
    """Seconds until every partition answers a Fetch of its first batch."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            wire = Wire(broker.port)
            try:
                if fetch_first_batches(wire, partitions) == len(partitions):
                    return time.monotonic()
            finally:
                wire.close()
        except (OSError, ConnectionError):
            pass
        time.sleep(0.2)
    raise SystemExit("the broker never served every partition")


@contextmanager
def timed(label: str, goal: str = "") -> Iterator[list[float]]:
    result: list[float] = []
    started = time.monotonic()
    yield result
    elapsed = time.monotonic() - started
    result.append(elapsed)
    print(f"{label:<52} {elapsed:8.2f} s{('   goal ' + goal) if goal else ''}", flush=True)


def restart(broker: Broker, sampler: Sampler, partitions: list[tuple[str, int]],
            signum: int, label: str, goal: str) -> None:
    broker.stop(signum)
    sampler.pid = None
    started = time.monotonic()
    listening = broker.start()
    assert broker.process is not None
    sampler.pid = broker.process.pid
    serving = wait_until_serving(broker, partitions) - started
    print(f"{label:<52} {serving:8.2f} s   goal {goal} (listening after "
          f"{listening:.2f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=5)
    parser.add_argument("--nofile", type=int, default=4096)
    parser.add_argument("--keep", action="store_true", help="keep the data dir")
    args = parser.parse_args()
    names = [f"scale-{n:05d}" for n in range(args.topics)]
    partitions = [(name, index) for name in names for index in range(args.partitions)]
    total = len(partitions)
    root = Path(tempfile.mkdtemp(prefix="kafkalite-scale-"))
    broker = Broker(root / "data", args.nofile)
    sampler = Sampler()
    print(f"one broker, RLIMIT_NOFILE {args.nofile}, {args.topics} topics x "
          f"{args.partitions} partitions = {total} partitions, {SEGMENTS} segments each; "
          f"data in {root}", flush=True)
    try:
        broker.start()
        assert broker.process is not None
        sampler.pid = broker.process.pid
        wire = Wire(broker.port)
        with timed(f"create {total} partitions", "< 60 s"):
            create_topics(wire, names, args.partitions)
            deadline = time.monotonic() + WAIT_S
            while led_partitions(wire, set(names)) < total:
                if time.monotonic() > deadline:
                    raise SystemExit("not every partition got a leader")
                time.sleep(0.2)
        batch = _batch()
        with timed(f"write {SEGMENTS} segments to each partition"):
            for _ in range(SEGMENTS):
                produce_everywhere(wire, partitions, batch)
        segment_files = sum(1 for _ in (root / "data").glob("scale-*/*.log"))
        print(f"{'segments on disk':<52} {segment_files:8d}", flush=True)
        with timed(f"Metadata for all {total} partitions", "< 1 s"):
            metadata(wire)
        with timed(f"Fetch offset 0 of all {total} partitions"):
            served = fetch_first_batches(wire, partitions)
        assert served == total, f"{served} of {total} partitions served"
        rss, fds = sampler.sample()
        print(f"{'after the writes: RSS, descriptors':<52} {rss:8.1f} MB {fds:6d}", flush=True)
        wire.close()
        restart(broker, sampler, partitions, signal.SIGKILL,
                "restart after SIGKILL until every partition serves", "< 30 s")
        restart(broker, sampler, partitions, signal.SIGTERM,
                "restart after SIGTERM until every partition serves", "< 15 s")
        rss, fds = sampler.sample()
        print(f"{'after the restarts: RSS, descriptors':<52} {rss:8.1f} MB {fds:6d}",
              flush=True)
        print(f"{'peak RSS':<52} {sampler.peak_rss_mb:8.1f} MB   goal < 500 MB")
        print(f"{'peak open descriptors':<52} {sampler.peak_fds:8d}      goal < {total} "
              f"(1 a partition)")
    finally:
        sampler.close()
        if broker.process is not None:
            broker.stop(signal.SIGKILL)
        if not args.keep:
            subprocess.run(["rm", "-rf", str(root)], check=False)


if __name__ == "__main__":
    main()
