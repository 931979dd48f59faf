"""Client throughput: kafkalite's Producer against kafka-python's and confluent-kafka's.

Produces N records (100-byte values, no key) with lz4, linger 5 ms, acks=1 and 16 KB batches
with each client in turn, in the same run, against the same broker: a kafkalite-server in a
subprocess (``--target server``, the default) and/or librdkafka's in-process mock cluster
(``--target mock``). Each client gets a fresh topic. The clock runs from the first ``send`` to
the end of ``flush``; one line per client: records/s and the ratio to kafkalite.

The consumer half (``--side consumer``) has each client read the same pre-filled topic
(N records in one partition) from offset 0 by assignment, no group: the fetch and
record-decoding path.

    python -m benchmarks.clients [--records N] [--target server|mock|both] [--repeat R]
                                 [--side producer|consumer|both]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.report import add_write_docs, documented

VALUE = b"v" * 100
SETTINGS = {"compression": "lz4", "linger_ms": 5, "acks": 1, "batch_size": 16384}
REPO_ROOT = Path(__file__).resolve().parent.parent

ProducerRun = Callable[[str, str, int], float]
"""(bootstrap servers, topic, record count) -> seconds from first send to flushed."""


def run_kafkalite(bootstrap: str, topic: str, count: int) -> float:
    from kafkalite import Producer

    with Producer(bootstrap, compression_type=SETTINGS["compression"],
                  linger_ms=SETTINGS["linger_ms"], acks=SETTINGS["acks"],
                  batch_size=SETTINGS["batch_size"]) as producer:
        producer.send(topic, VALUE).get(30)  # metadata and connections before the clock
        send = producer.send
        start = time.perf_counter()
        for _ in range(count):
            send(topic, VALUE)
        producer.flush()
        return time.perf_counter() - start


def run_kafka_python(bootstrap: str, topic: str, count: int) -> float:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap,
                             compression_type=SETTINGS["compression"],
                             linger_ms=SETTINGS["linger_ms"], acks=SETTINGS["acks"],
                             batch_size=SETTINGS["batch_size"])
    try:
        producer.send(topic, VALUE).get(30)
        send = producer.send
        start = time.perf_counter()
        for _ in range(count):
            send(topic, VALUE)
        producer.flush()
        return time.perf_counter() - start
    finally:
        producer.close()


def run_confluent(bootstrap: str, topic: str, count: int) -> float:
    import confluent_kafka

    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "compression.type": SETTINGS["compression"],
        "linger.ms": SETTINGS["linger_ms"], "acks": SETTINGS["acks"],
        "batch.size": SETTINGS["batch_size"], "queue.buffering.max.messages": 1_000_000,
        "log_level": 3,
    })
    producer.produce(topic, VALUE)
    producer.flush(30)
    produce, poll = producer.produce, producer.poll
    start = time.perf_counter()
    for i in range(count):
        try:
            produce(topic, VALUE)
        except BufferError:
            poll(0.01)
            produce(topic, VALUE)
        if not i & 1023:
            poll(0)
    producer.flush()
    return time.perf_counter() - start


CLIENTS: dict[str, ProducerRun] = {
    "kafkalite": run_kafkalite,
    "kafka-python": run_kafka_python,
    "confluent-kafka": run_confluent,
}


@contextlib.contextmanager
def kafkalite_server(settings: dict[str, str] | None = None) -> Iterator[str]:
    """A kafkalite-server subprocess on a free port, with broker ``settings`` on top of its
    defaults; yields its bootstrap address."""
    sets = [arg for key, value in (settings or {}).items() for arg in ("--set", f"{key}={value}")]
    with tempfile.TemporaryDirectory() as data_dir:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        process = subprocess.Popen(
            [sys.executable, "-m", "kafkalite_server", "start", "--data-dir", data_dir,
             "--port", "0", *sets], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=env)
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("listening on "):
                    yield line.split()[2]
                    break
            else:
                raise RuntimeError("kafkalite-server did not start")
        finally:
            process.terminate()
            process.wait(30)


@contextlib.contextmanager
def mock_cluster() -> Iterator[str]:
    """librdkafka's mock cluster (one broker), alive while the handle is."""
    import confluent_kafka

    handle = confluent_kafka.Producer({"test.mock.num.brokers": 1, "log_level": 3})
    brokers = handle.list_topics(timeout=10).brokers.values()
    yield ",".join(f"{b.host}:{b.port}" for b in brokers)


def race(runs: dict[str, Callable[[int], float]], count: int, repeat: int,
         header: str) -> None:
    """Run every client ``repeat`` rounds, interleaved, keep each one's best time, and print
    records/s with the ratio of kafkalite to each peer. ``runs`` maps a client name to a
    function of the round number returning seconds; a peer that cannot talk to the target is
    reported as failed, not fatal."""
    best: dict[str, float] = {}
    failures: dict[str, str] = {}
    for round_ in range(repeat):
        for name, run in runs.items():
            if name in failures:
                continue
            try:
                seconds = run(round_)
            except Exception as exc:  # a peer client that cannot talk to this target
                failures[name] = f"{type(exc).__name__}: {exc}"
                continue
            best[name] = min(best.get(name, seconds), seconds)
    ours = count / best["kafkalite"]
    print(f"{header} best of {repeat}")
    for name, seconds in best.items():
        rate = count / seconds
        print(f"  {name:16s} {rate:12,.0f} records/s   kafkalite/{name} = {ours / rate:5.2f}")
    for name, failure in failures.items():
        print(f"  {name:16s} failed: {failure}")


def bench(target: str, count: int, repeat: int) -> None:
    broker = kafkalite_server() if target == "server" else mock_cluster()
    with broker as bootstrap:
        runs: dict[str, Callable[[int], float]] = {
            name: lambda round_, run=run, name=name: run(bootstrap, f"bench-{name}-{round_}",
                                                         count)
            for name, run in CLIENTS.items()}
        race(runs, count, repeat,
             f"target={target} records={count} value=100B lz4 linger_ms=5 acks=1")


# -- consumers --------------------------------------------------------------------------------

ConsumerRun = Callable[[str, str, int], float]
"""(bootstrap servers, topic, record count) -> seconds from the first poll to the last record."""


def fill(bootstrap: str, topic: str, count: int) -> None:
    """Write ``count`` records to partition 0 of ``topic`` (librdkafka: the fastest writer)."""
    import confluent_kafka

    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "compression.type": SETTINGS["compression"],
        "linger.ms": SETTINGS["linger_ms"], "queue.buffering.max.messages": 1_000_000,
        "log_level": 3})
    for _ in range(count):
        producer.produce(topic, VALUE, partition=0)
    if producer.flush(60):
        raise RuntimeError("could not fill the benchmark topic")


def time_polls(consumer: Any, count: int) -> float:
    """Seconds to poll ``count`` records: the same loop for kafkalite and kafka-python, whose
    ``poll`` has the same shape."""
    seen = 0
    start = time.perf_counter()
    while seen < count:
        for records in consumer.poll(timeout_ms=1000).values():
            seen += len(records)
    return time.perf_counter() - start


def consume_kafkalite(bootstrap: str, topic: str, count: int) -> float:
    from kafkalite import Consumer, TopicPartition

    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        return time_polls(consumer, count)


def consume_kafka_python(bootstrap: str, topic: str, count: int) -> float:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        return time_polls(consumer, count)
    finally:
        consumer.close()


def consume_confluent(bootstrap: str, topic: str, count: int) -> float:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"bench-{topic}",
        "enable.auto.commit": False, "log_level": 3})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        seen = 0
        start = time.perf_counter()
        while seen < count:
            for message in consumer.consume(num_messages=500, timeout=1.0):
                if not message.error():
                    seen += 1
        return time.perf_counter() - start
    finally:
        consumer.close()


CONSUMERS: dict[str, ConsumerRun] = {
    "kafkalite": consume_kafkalite,
    "kafka-python": consume_kafka_python,
    "confluent-kafka": consume_confluent,
}


def bench_consumers(target: str, count: int, repeat: int) -> None:
    """Every client reads the same pre-filled topic from offset 0, rounds interleaved."""
    broker = kafkalite_server() if target == "server" else mock_cluster()
    with broker as bootstrap:
        topic = "bench-consume"
        fill(bootstrap, topic, count)
        runs: dict[str, Callable[[int], float]] = {
            name: lambda _round, run=run: run(bootstrap, topic, count)
            for name, run in CONSUMERS.items()}
        race(runs, count, repeat,
             f"consume: target={target} records={count} value=100B lz4 one partition")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--target", choices=("server", "mock", "both"), default="server")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--side", choices=("producer", "consumer", "both"), default="both")
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.clients", args.write_docs):
        for target in ("server", "mock") if args.target == "both" else (args.target,):
            if args.side != "consumer":
                bench(target, args.records, args.repeat)
            if args.side != "producer":
                bench_consumers(target, args.records, args.repeat)


if __name__ == "__main__":
    main()
