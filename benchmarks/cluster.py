"""Leader failover time on a three-process kafkalite cluster over a real ZooKeeper.

Three ``python -m kafkalite_server start`` processes (the suite's ``BrokerProcess`` helper)
join a standalone ZooKeeper (Debian's package, the suite's ``ZooKeeperServer`` helper) with
``zookeeper.session.timeout.ms=6000``. One topic has three partitions, replication factor 3
and ``min.insync.replicas=2``. Each round picks the broker leading partition 0, stops it,
and has a warmed-up confluent-kafka producer (``acks=all``) send one record to every
partition that broker led, right after the signal. The figure is the time from the signal
to the last of those records being acknowledged: until then some partition of the stopped
broker takes no writes.

- ``kill``: SIGKILL. The controller learns of the loss only when the broker's ZooKeeper
  session expires, so the session timeout bounds the figure from below.
- ``stop``: SIGTERM. The broker asks the controller to move its leaderships away
  (ControlledShutdown) before it closes its sockets; the goal is under a second.
- ``stop-controller``: SIGTERM of the controller itself, after a preferred leader election
  so that it leads a partition. It moves its own leaderships, waits until the brokers
  have answered, and only then resigns; the goal is the same.

The stopped broker is restarted and the ISR of every partition is full again before the
next round. Automatic leader rebalance is off so that no leader moves mid-round.

The last line is the latency of Metadata requests that an idle client sends to broker 1,
one at a time, while leaders change ISRs: on a second cluster whose brokers reach
ZooKeeper through a proxy adding ``ZK_DELAY_S`` to each hop (ZooKeeper on another
machine), broker 3 is paused (SIGSTOP) past ``replica.lag.time.max.ms`` and resumed, so
the leaders of ``ISR_PARTITIONS`` partitions shrink their ISRs and expand them again. A
broker whose event loop waited on ZooKeeper held every answer for those writes.

    python -m benchmarks.cluster [--rounds 5] [--only-metadata]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from confluent_kafka import ElectionType, Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests" / "cluster"))
sys.path.insert(0, str(REPO_ROOT / "tests" / "faults"))
from zookeeper_server import ZooKeeperServer  # noqa: E402

from benchmarks.report import add_write_docs, documented  # noqa: E402
from kafkalite.protocol import ApiKey, decode_response, encode_request  # noqa: E402

BROKERS = (1, 2, 3)
TOPIC = "failover"
PARTITIONS = 3
SESSION_MS = 6000
WAIT_S = 60.0
SEND_INTERVAL_S = 0.01
ISR_TOPIC = "isr-churn"
ISR_PARTITIONS = 24
ISR_LAG_MS = 1000
ISR_CYCLES = 3
ZK_DELAY_S = 0.01
METADATA_INTERVAL_S = 0.005


def _suite_helpers() -> ModuleType:
    """tests/conftest.py, which holds ``BrokerProcess`` (loaded by path: ``conftest`` is
    also the name of tests/cluster/conftest.py)."""
    spec = importlib.util.spec_from_file_location("suite_conftest",
                                                  REPO_ROOT / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _until(condition: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


@contextlib.contextmanager
def cluster(root: Path, *extra: str, zk_delay_s: float = 0.0) -> Iterator[dict[int, Any]]:
    """Three brokers over a fresh ZooKeeper; with ``zk_delay_s``, each broker reaches it
    through a proxy that holds every chunk that long in each direction."""
    broker_process = _suite_helpers().BrokerProcess
    zookeeper = ZooKeeperServer(root / "zookeeper").start()
    proxy = None
    ports = {b: zookeeper.port for b in BROKERS}
    if zk_delay_s:
        from proxy import LinkProxy
        proxy = LinkProxy().start()
        ports = {b: proxy.listen(zookeeper.port, "zk", f"b{b}") for b in BROKERS}
        proxy.delay([(f"b{b}", "zk") for b in BROKERS], zk_delay_s)
    brokers = {b: broker_process(root / f"broker-{b}", [
        "--set", f"broker.id={b}", "--set", f"zookeeper.connect=127.0.0.1:{ports[b]}/bench",
        "--set", f"zookeeper.session.timeout.ms={SESSION_MS}",
        "--set", "auto.leader.rebalance.enable=false",
        "--set", "replica.fetch.backoff.ms=200", *extra]) for b in BROKERS}
    try:
        for broker in brokers.values():
            broker.start()
        yield brokers
    finally:
        for broker in brokers.values():
            broker.kill()
        if proxy is not None:
            proxy.stop()
        zookeeper.stop()


def partition_states(admin: AdminClient) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, ISR), as a live broker's metadata cache has them."""
    topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    return {p.id: (p.leader, sorted(p.isrs)) for p in topic.partitions.values()}


def fully_replicated(admin: AdminClient) -> bool:
    states = partition_states(admin)
    return len(states) == PARTITIONS and all(
        leader in BROKERS and isr == list(BROKERS) for leader, isr in states.values())


def preferred_leaders(admin: AdminClient) -> bool:
    topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    return all(p.leader == p.replicas[0] for p in topic.partitions.values())


def failover_round(brokers: dict[int, Any], admin: AdminClient, producer: Producer,
                   how: str) -> tuple[float, float]:
    """One round: stop partition 0's leader and, from the signal on, send a record every
    ``SEND_INTERVAL_S`` to each partition it led, until metadata names new leaders for all
    of them and every record sent is acknowledged. Returns (the time from the signal to the
    last partition's first acknowledgement, the longest produce-to-acknowledgement latency
    of a record sent in that window). Then brings the broker back with a full ISR."""
    _until(lambda: fully_replicated(admin), "a full ISR on every partition")
    if how == "stop-controller":
        # Preferred leaders back, so the controller leads a partition of its own.
        admin.elect_leaders(ElectionType.PREFERRED, None).result(WAIT_S)
        _until(lambda: preferred_leaders(admin), "the preferred leaders")
        victim = admin.list_topics(timeout=10).controller_id
    else:
        victim = partition_states(admin)[0][0]
    led = [p for p, (leader, _isr) in partition_states(admin).items() if leader == victim]
    acked: dict[int, float] = {}
    latencies: list[float] = []
    failures: list[str] = []
    moved = threading.Event()

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked.setdefault(msg.partition(), time.monotonic())
            latencies.append(msg.latency())
        else:
            failures.append(str(err))

    def watch_leaders() -> None:
        def new_leaders() -> bool:
            now = partition_states(admin)
            return all(now[p][0] not in (-1, victim) for p in led)
        _until(new_leaders, "new leaders in the metadata")
        moved.set()

    process = brokers[victim].process
    started, wall = time.monotonic(), time.time()
    process.send_signal(9 if how == "kill" else 15)
    threading.Thread(target=watch_leaders, daemon=True).start()
    sent = 0
    next_send = started
    while not (moved.is_set() and len(latencies) == sent) and not failures:
        if time.monotonic() - started > WAIT_S:
            raise RuntimeError(f"no failover within {WAIT_S} s")
        if not moved.is_set() and time.monotonic() >= next_send:
            for partition in led:
                producer.produce(TOPIC, b"after", partition=partition, on_delivery=delivered)
                sent += 1
            next_send += SEND_INTERVAL_S
        producer.poll(0.002)
    if failures:
        raise RuntimeError(f"not acknowledged: {failures}")
    first_ack, stall = max(acked.values()) - started, max(latencies)
    print(f"{how} broker {victim} at {time.strftime('%H:%M:%S', time.localtime(wall))}: "
          f"partitions {led}, first acknowledgement {first_ack:.3f} s, "
          f"longest latency {stall:.3f} s, {sent} records", file=sys.stderr, flush=True)
    if how == "kill":
        brokers[victim].kill()  # reaps it
    else:
        brokers[victim].terminate()  # lets the clean shutdown finish
    # A SIGKILLed broker's registration lives until its session expires.
    _until(lambda: victim not in admin.list_topics(timeout=10).brokers, "the registration gone")
    brokers[victim].start()
    return first_ack, stall


class MetadataProbe:
    """An idle client: one connection, one Metadata request at a time, each timed."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=WAIT_S)
        self.samples: list[tuple[float, float]] = []
        """(when the request went out, on the monotonic clock; how long its answer took)"""
        self._correlation = 0

    def ask(self) -> float:
        self._correlation += 1
        body = {"topics": [{"name": ISR_TOPIC}], "allow_auto_topic_creation": False}
        started = time.perf_counter()
        self.sock.sendall(encode_request(ApiKey.METADATA, 8, self._correlation, "probe", body))
        size = int.from_bytes(self._read(4), "big")
        correlation, _answer = decode_response(ApiKey.METADATA, 8, self._read(size))
        assert correlation == self._correlation
        return time.perf_counter() - started

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the probe's connection")
            data += chunk
        return bytes(data)

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            sent = time.monotonic()
            self.samples.append((sent, self.ask()))
            time.sleep(METADATA_INTERVAL_S)


def isr_states(admin: AdminClient) -> dict[int, list[int]]:
    topic = admin.list_topics(ISR_TOPIC, timeout=10).topics[ISR_TOPIC]
    return {p.id: sorted(p.isrs) for p in topic.partitions.values()}


def metadata_during_isr_changes(root: Path) -> list[float]:
    """Metadata latencies on broker 1 while broker 3 leaves and rejoins the ISRs of the
    partitions brokers 1 and 2 lead (ZooKeeper ``ZK_DELAY_S`` away): the requests sent
    between the first ISR shrink and the last (the shrinks in flight), and between the
    resume and the full ISR (the expansions)."""
    with cluster(root, "--set", f"replica.lag.time.max.ms={ISR_LAG_MS}",
                 zk_delay_s=ZK_DELAY_S) as brokers:
        bootstrap = ",".join(b.bootstrap_servers for b in brokers.values())
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        admin.create_topics([NewTopic(ISR_TOPIC, ISR_PARTITIONS, 3)])[ISR_TOPIC].result(60)
        _until(lambda: (s := isr_states(admin)) and len(s) == ISR_PARTITIONS
               and all(isr == list(BROKERS) for isr in s.values()), "a full ISR")
        probe = MetadataProbe(brokers[1].bootstrap_servers)
        for _ in range(20):  # warm
            probe.ask()
        stop = threading.Event()
        thread = threading.Thread(target=probe.run, args=(stop,), daemon=True)
        thread.start()
        paused = brokers[3].process
        windows: list[tuple[float, float]] = []
        try:
            for cycle in range(ISR_CYCLES):
                paused.send_signal(signal.SIGSTOP)
                _until(lambda: any(3 not in isr for isr in isr_states(admin).values()),
                       "a first ISR shrink")
                shrinking = time.monotonic()
                _until(lambda: sum(3 not in isr for isr in isr_states(admin).values())
                       >= ISR_PARTITIONS * 2 // 3 - 1, "broker 3 out of the ISRs it follows")
                windows.append((shrinking, time.monotonic()))
                resumed = time.monotonic()
                paused.send_signal(signal.SIGCONT)
                _until(lambda: all(isr == list(BROKERS) for isr in isr_states(admin).values()),
                       "broker 3 back in every ISR")
                windows.append((resumed, time.monotonic()))
                print(f"ISR cycle {cycle + 1}: {len(probe.samples)} Metadata answers so far",
                      file=sys.stderr, flush=True)
        finally:
            paused.send_signal(signal.SIGCONT)
            stop.set()
            thread.join(WAIT_S)
        return [latency for sent, latency in probe.samples
                if any(start <= sent <= end for start, end in windows)]


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only-metadata", action="store_true",
                        help="only the Metadata latency under ISR changes")
    parser.add_argument("--data-dir", type=Path,
                        help="keep the brokers' logs and data here (default: a temporary dir)")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    with documented("benchmarks.cluster", args.write_docs):
        if not args.only_metadata:
            failovers(args)
        with tempfile.TemporaryDirectory() as scratch:
            samples = metadata_during_isr_changes(
                (args.data_dir / "isr") if args.data_dir else Path(scratch))
        print(f"Metadata from an idle client while ISRs change ({ISR_PARTITIONS} partitions, "
              f"ZooKeeper {ZK_DELAY_S * 1000:.0f} ms away)  "
              f"p50 {_percentile(samples, 0.5) * 1000:6.1f} ms  "
              f"p99 {_percentile(samples, 0.99) * 1000:6.1f} ms  "
              f"max {max(samples) * 1000:6.1f} ms  ({len(samples)} requests)")


def failovers(args: argparse.Namespace) -> None:
    """The three failover figures (SIGKILL, SIGTERM, SIGTERM of the controller)."""
    with contextlib.ExitStack() as stack:
        root = args.data_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        brokers = stack.enter_context(cluster(root))
        # The stopped broker keeps its port across restarts: one bootstrap list serves all.
        bootstrap = ",".join(b.bootstrap_servers for b in brokers.values())
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3,
                                      config={"min.insync.replicas": "2"})])[TOPIC].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0,
                             "linger.ms": 0, "message.timeout.ms": int(WAIT_S * 1000),
                             "retry.backoff.ms": 20, "retry.backoff.max.ms": 100,
                             "topic.metadata.refresh.fast.interval.ms": 20})
        _until(lambda: fully_replicated(admin), "a full ISR on every partition")
        for partition in range(PARTITIONS):  # connections and metadata warm
            producer.produce(TOPIC, b"warm", partition=partition)
        if producer.flush(30):
            raise RuntimeError("warm-up records not acknowledged")
        results: dict[str, list[tuple[float, float]]] = {
            "kill": [], "stop": [], "stop-controller": []}
        for _ in range(args.rounds):
            for how in results:
                results[how].append(failover_round(brokers, admin, producer, how))
        producer.flush(10)
    labels = {"kill": "SIGKILL of the leader (session 6 s)",
              "stop": "SIGTERM, controlled shutdown      ",
              "stop-controller": "SIGTERM of the controller itself  "}
    for how, rounds in results.items():
        for index, figure in enumerate(("first ack", "longest  ")):
            seconds = [r[index] for r in rounds]
            print(f"{labels[how]}  {figure}  median {statistics.median(seconds):6.3f} s  "
                  f"max {max(seconds):6.3f} s  ({len(seconds)} rounds)")


if __name__ == "__main__":
    main()
