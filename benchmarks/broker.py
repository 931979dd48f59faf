"""Broker throughput: kafkalite-server under confluent-kafka load, next to the machine's
raw limits measured in the same run.

Limits: page-cache write speed (16 KB blocks to a temp file, no fsync) and loopback
``sendfile`` speed (a file sent over a local TCP connection to a reader that discards).
Cases: produce and fetch of 100-byte and 10 KB records (incompressible values, acks=1),
uncompressed and lz4, by librdkafka against a ``python -m kafkalite_server start``
subprocess. One line per case: MB/s of record values, the ratio to its limit (produce to the page-cache write
limit, fetch to the sendfile limit) and the broker's CPU use (share of one core): well
below 100% means the load generator, not the broker, set the pace.

With ``--only-metrics``, the cost of metrics instead: the 100-byte uncompressed case
against two fresh brokers, one without ``kafkalite.metrics.listener`` and one with it,
scraped every second by a separate process, their runs alternating. Two figures each: the
throughput (the load generator sets it, so it moves with the machine's load) and the
broker's CPU seconds per 100 MB of values, which a busy machine disturbs less; the
differences are printed (they should stay within 3%). Then the parts directly: the broker
CPU one scrape costs, and what counting adds to one request (counting is always on, so
the two brokers above cannot show it).

    python -m benchmarks.broker [--megabytes 256] [--repeat 3] [--only-metrics]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from benchmarks.confluent_load import produce_all
from benchmarks.report import add_write_docs, documented

REPO_ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
BLOCK = 16 * 1024
RECORD_SIZES = (100, 10 * 1024)
CODECS = ("none", "lz4")
PRODUCER_SETTINGS = {"acks": 1, "linger.ms": 5}
METRICS_BLOCK = "benchmarks.broker.metrics"
"""The performance page's markers for ``--only-metrics`` (the full run has its own)."""


# ------------------------------------------------------------------ raw limits


def page_cache_write_limit(directory: Path, total: int) -> float:
    """MB/s writing 16 KB blocks to a fresh file, no fsync (the kernel's copy only)."""
    block = os.urandom(BLOCK)
    path = directory / "page-cache-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(total // BLOCK):
            os.write(fd, block)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
    return total / MB / elapsed


def loopback_sendfile_limit(directory: Path, total: int) -> float:
    """MB/s of ``os.sendfile`` from a cached file to a local TCP reader that discards."""
    path = directory / "sendfile-probe"
    path.write_bytes(os.urandom(BLOCK) * (total // BLOCK))
    listener = socket.create_server(("127.0.0.1", 0))
    sender = socket.create_connection(listener.getsockname())
    receiver, _ = listener.accept()
    listener.close()

    def drain() -> None:
        buffer = bytearray(1 << 20)
        while receiver.recv_into(buffer):
            pass
    reader = threading.Thread(target=drain)
    reader.start()
    with path.open("rb") as file:
        start = time.perf_counter()
        offset = 0
        while offset < total:
            offset += os.sendfile(sender.fileno(), file.fileno(), offset, total - offset)
        sender.shutdown(socket.SHUT_WR)
        reader.join()
        elapsed = time.perf_counter() - start
    sender.close()
    receiver.close()
    path.unlink()
    return total / MB / elapsed


# ------------------------------------------------------------------ the broker


@contextlib.contextmanager
def broker_subprocess(data_dir: Path, profile: Path | None = None,
                      settings: tuple[str, ...] = ()) -> Iterator[tuple[str, int]]:
    """(bootstrap servers, pid) of a kafkalite-server on a free port; output is drained.
    With ``profile``, the broker runs under pyinstrument, which writes its report there
    when the broker stops."""
    profiler = [] if profile is None else ["-m", "pyinstrument", "-o", str(profile)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen([sys.executable, *profiler, "-m", "kafkalite_server", "start",
                                "--port",
                                "0", "--data-dir", str(data_dir),
                                *(arg for setting in settings for arg in ("--set", setting))],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=env)
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if line.startswith("listening on "):
                bootstrap = line.split()[2]
                break
        else:
            raise RuntimeError("kafkalite-server did not start")
        threading.Thread(target=process.stdout.read, daemon=True).start()
        yield bootstrap, process.pid
    finally:
        process.terminate()
        process.wait(30)


def values_of(size: int, count: int) -> list[bytes]:
    """Distinct incompressible values (lz4 cannot shrink them, so MB/s is bytes on disk)."""
    pool = os.urandom(size + 4096)
    return [pool[i % 4096:i % 4096 + size] for i in range(min(count, 4096))]


def produce(bootstrap: str, topic: str, size: int, count: int, codec: str) -> float:
    """MB/s of values from the first produce to the end of flush."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                         **PRODUCER_SETTINGS})
    producer.produce(topic, b"warm-up", partition=0)
    producer.flush(30)
    elapsed = produce_all(producer, topic, values_of(size, count), count, flush_timeout=120)
    return size * count / MB / elapsed


def fetch(bootstrap: str, topic: str, size: int, count: int) -> float:
    """MB/s of values read by assignment from offset 1 (after the warm-up record)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "benchmark",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 10,
                         "fetch.queue.backoff.ms": 1})
    consumer.assign([TopicPartition(topic, 0, 0)])
    while consumer.poll(10) is None:  # connections and the warm-up record
        pass
    received = 0
    start = time.perf_counter()
    while received < count:
        for message in consumer.consume(min(count - received, 10000), 0.5):
            if message.error() is None:
                received += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return size * count / MB / elapsed


def proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, ...); None
    when the process is gone or there is no ``/proc``."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux ``/proc``; 0 elsewhere)."""
    fields = proc_stat(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def broker_cpu(pid: int, busy: list[float]) -> Iterator[None]:
    """Appends the broker's CPU use over the block, as a share of one core."""
    cpu, wall = cpu_seconds(pid), time.perf_counter()
    yield
    busy.append((cpu_seconds(pid) - cpu) / (time.perf_counter() - wall))


def report(case: str, rate: float, limit_name: str, limit: float, busy: float) -> None:
    print(f"{case:<20} {rate:8.1f} MB/s   {limit_name} {limit:8.1f} MB/s   "
          f"ratio {rate / limit:6.1%}   broker CPU {busy:4.0%}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=256,
                        help="value bytes per case (default 256)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per case; the best one is printed (default 1)")
    parser.add_argument("--profile", type=Path,
                        help="run the broker under pyinstrument, report to this file")
    parser.add_argument("--only-metrics", action="store_true",
                        help="only the cost of metrics (metrics off against on)")
    add_write_docs(parser)
    args = parser.parse_args(argv)
    total = args.megabytes * MB
    if args.only_metrics:
        with documented("benchmarks.broker", args.write_docs, block=METRICS_BLOCK), \
                tempfile.TemporaryDirectory(prefix="kafkalite-bench-") as tmp:
            metrics_cost(Path(tmp), total // RECORD_SIZES[0], args.repeat)
        return
    with documented("benchmarks.broker", args.write_docs), \
            tempfile.TemporaryDirectory(prefix="kafkalite-bench-") as tmp:
        work = Path(tmp)
        write_limit = max(page_cache_write_limit(work, total) for _ in range(args.repeat))
        sendfile_limit = max(loopback_sendfile_limit(work, total) for _ in range(args.repeat))
        (work / "page-cache-probe").unlink()
        print(f"{'page-cache write':<22} {write_limit:8.1f} MB/s")
        print(f"{'loopback sendfile':<22} {sendfile_limit:8.1f} MB/s", flush=True)
        with broker_subprocess(work / "data", args.profile) as (bootstrap, pid):
            print(f"broker pid {pid} at {bootstrap}", flush=True)
            for size in RECORD_SIZES:
                for codec in CODECS:
                    run_case(bootstrap, pid, size, codec, total // size, args.repeat,
                             write_limit, sendfile_limit)


def metrics_cost(work: Path, count: int, repeat: int) -> None:
    """Produce and fetch with the metrics endpoint off and on (scraped each second): both
    brokers run at once and the runs alternate (off, on, on, off, off, on, ...), so a change
    in the machine's load, or the page cache the previous run left dirty, weighs on both
    alike. Printed: the best MB/s of ``repeat`` runs and the
    broker's CPU seconds per 100 MB of values over all of them (a sum, since one run's CPU
    time is only a few dozen clock ticks), each mode, and the differences."""
    port = _free_port()
    modes = ("off", "on")
    rates: dict[str, tuple[list[float], list[float]]] = {mode: ([], []) for mode in modes}
    cpu: dict[str, tuple[list[float], list[float]]] = {mode: ([], []) for mode in modes}
    megabytes = RECORD_SIZES[0] * count / MB
    with contextlib.ExitStack() as stack:
        brokers = {
            "off": stack.enter_context(broker_subprocess(work / "data-metrics-off")),
            "on": stack.enter_context(broker_subprocess(
                work / "data-metrics-on",
                settings=(f"kafkalite.metrics.listener=127.0.0.1:{port}",))),
        }
        stack.enter_context(_scraping(port))
        before_runs = requests_served(port)
        for run in range(repeat):
            order = modes if run % 2 == 0 else modes[::-1]  # neither always goes first
            for mode in order:
                bootstrap, pid = brokers[mode]
                topic = f"bench-metrics-{run}"
                for index in (0, 1):
                    before = cpu_seconds(pid)
                    rates[mode][index].append(
                        fetch(bootstrap, topic, RECORD_SIZES[0], count) if index else
                        produce(bootstrap, topic, RECORD_SIZES[0], count, "none"))
                    cpu[mode][index].append(cpu_seconds(pid) - before)
        after_runs = requests_served(port)
        scrape = scrape_cpu_seconds(port, brokers["on"][1])
    requests = {name: after_runs[name] - before_runs.get(name, 0.0) for name in after_runs}
    cpu_per_100mb = {mode: [sum(seconds) * 100 / (megabytes * repeat) for seconds in cpu[mode]]
                     for mode in modes}
    for mode in modes:
        print(f"metrics {mode:<4} produce {max(rates[mode][0]):8.1f} MB/s "
              f"{cpu_per_100mb[mode][0]:6.3f} CPU s/100 MB   "
              f"fetch {max(rates[mode][1]):8.1f} MB/s "
              f"{cpu_per_100mb[mode][1]:6.3f} CPU s/100 MB", flush=True)
    for index, name in enumerate(("produce", "fetch")):
        off, on = max(rates["off"][index]), max(rates["on"][index])
        cpu_off, cpu_on = cpu_per_100mb["off"][index], cpu_per_100mb["on"][index]
        print(f"metrics cost {name:<8} {(off - on) / off:+6.1%} of throughput, "
              f"{(cpu_on - cpu_off) / cpu_off:+6.1%} broker CPU per MB", flush=True)
    for index, name in enumerate(("produce", "fetch")):
        busy = sum(cpu["on"][index]) / sum(megabytes / rate for rate in rates["on"][index])
        print(f"one scrape {scrape * 1000:5.2f} ms of broker CPU: scraped each second, "
              f"{scrape / busy:5.2%} of the broker's CPU while it served the {name} runs "
              f"({busy:4.0%} of a core)", flush=True)
    counting = counting_seconds_per_request()
    for index, request in enumerate(("Produce", "FetchConsumer")):
        per_request = sum(cpu["on"][index]) / requests[request]
        print(f"counting per {request:<13} request {counting * 1e6:5.2f} us = "
              f"{counting / per_request:5.2%} of the broker's {per_request * 1e6:6.0f} us CPU "
              f"per request ({requests[request]:.0f} requests)", flush=True)


def requests_served(port: int) -> dict[str, float]:
    """Requests answered so far by request name, read from the broker's ``/metrics``."""
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read()
    served: dict[str, float] = {}
    for family in text_string_to_metric_families(text.decode()):
        if family.name == "kafka_network_requestmetrics_requests":
            for sample in family.samples:
                name = sample.labels["request"]
                served[name] = served.get(name, 0.0) + sample.value
    return served


def scrape_cpu_seconds(port: int, pid: int, scrapes: int = 50) -> float:
    """Broker CPU seconds one ``/metrics`` scrape costs: scrapes back to back, less what
    the broker uses idle over the same time (measured just before)."""
    url = f"http://127.0.0.1:{port}/metrics"
    before, wall = cpu_seconds(pid), time.perf_counter()
    time.sleep(2.0)
    idle_per_second = (cpu_seconds(pid) - before) / (time.perf_counter() - wall)
    before, wall = cpu_seconds(pid), time.perf_counter()
    for _ in range(scrapes):
        urllib.request.urlopen(url, timeout=30).read()
    spent = cpu_seconds(pid) - before - idle_per_second * (time.perf_counter() - wall)
    return max(spent, 0.0) / scrapes


def counting_seconds_per_request() -> float:
    """CPU seconds the broker's counting adds to one Produce or Fetch of one partition: the
    request counter (name, version, latency bucket) and the three per-topic counters an
    append or a fetch bumps, timed on the broker's own counter classes. Counting is always
    on (the endpoint only reads the counters), so comparing brokers with the endpoint on
    and off cannot show this part; it is measured here instead."""
    from kafkalite.protocol import ApiKey
    from kafkalite_server.metrics.counters import ReplicaCounters
    from kafkalite_server.metrics.requests import RequestCounters, request_name

    requests, replica = RequestCounters(), ReplicaCounters()
    body = {"replica_id": -1}
    rounds = 200_000
    start = time.process_time()
    for _ in range(rounds):
        requests.record(request_name(ApiKey.FETCH, body), 13, 0.25)
        replica.messages_in["topic"] += 100
        replica.bytes_in["topic"] += 16_000
        replica.failed_produce["topic"] += False
    return (time.process_time() - start) / rounds


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _scraping(port: int) -> Iterator[None]:
    """Scrapes ``/metrics`` every second while the block runs, from a process of its own
    (a thread here would take the load generator's GIL and count against the broker)."""
    scraper = subprocess.Popen([sys.executable, "-c", SCRAPER, str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        scraper.terminate()
        scraper.wait(30)


SCRAPER = """
import contextlib, sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/metrics"
while True:
    time.sleep(1.0)
    with contextlib.suppress(OSError):
        urllib.request.urlopen(url, timeout=10).read()
"""


def run_case(bootstrap: str, pid: int, size: int, codec: str, count: int, repeat: int,
             write_limit: float, sendfile_limit: float) -> None:
    """Produce then fetch ``count`` records of ``size`` bytes; print the best of ``repeat``."""
    label = f"{size} B" if size < 1024 else f"{size // 1024} KB"
    label = f"{label} {codec}"
    produced: list[float] = []
    fetched: list[float] = []
    produce_cpu: list[float] = []
    fetch_cpu: list[float] = []
    for run in range(repeat):
        topic = f"bench-{size}-{codec}-{run}"
        with broker_cpu(pid, produce_cpu):
            produced.append(produce(bootstrap, topic, size, count, codec))
        with broker_cpu(pid, fetch_cpu):
            fetched.append(fetch(bootstrap, topic, size, count))
    best = produced.index(max(produced))
    report(f"produce {label}", produced[best], "page-cache write", write_limit,
           produce_cpu[best])
    best = fetched.index(max(fetched))
    report(f"fetch {label}", fetched[best], "loopback sendfile", sendfile_limit,
           fetch_cpu[best])

if __name__ == "__main__":
    main()
