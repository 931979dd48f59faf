"""Security overhead: produce and consume throughput over SASL_SSL (SCRAM-SHA-256) against
PLAINTEXT, in the same run, against one ``python -m kafkalite_server start`` subprocess with
both listeners.

The load is confluent-kafka (librdkafka): it is not the bottleneck, so the figures are the
broker's. Cases: 1 KB and 100 KB records, acks=1, no compression. One line per case: MB/s of
record values for each listener and the SASL_SSL / PLAINTEXT ratio. A fresh CA and server
certificate are made in a temporary directory for the run.

    python -m benchmarks.security [--megabytes 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.confluent_load import produce_all  # noqa: E402
from benchmarks.report import add_write_docs, documented  # noqa: E402
from tests.security.certs import make_pki  # noqa: E402

MB = 1 << 20
RECORD_SIZES = (1024, 100 * 1024)
USER, PASSWORD = "bench", "bench-secret"


def start_broker(work: Path) -> tuple[subprocess.Popen[str], dict[str, str], Path]:
    pki = make_pki(work / "pki")
    data = work / "data"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    subprocess.run([sys.executable, "-m", "kafkalite_server", "scram-user", "--data-dir",
                    str(data), "--user", USER, "--password", PASSWORD], check=True, env=env,
                   capture_output=True)
    args = [sys.executable, "-m", "kafkalite_server", "start", "--data-dir", str(data),
            "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "--set", f"ssl.keystore.location={pki.server}",
            "--set", "sasl.enabled.mechanisms=SCRAM-SHA-256"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env=env)
    addresses: dict[str, str] = {}
    assert process.stdout is not None
    while len(addresses) < 2:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the broker did not start")
        if line.startswith("listener "):
            name, address = line.split()[1], line.split()[-1]
            addresses[name] = address
    return process, addresses, pki.ca


def client_conf(protocol: str, address: str, ca: Path) -> dict[str, str]:
    conf = {"bootstrap.servers": address, "security.protocol": protocol}
    if protocol == "SASL_SSL":
        conf.update({"ssl.ca.location": str(ca), "sasl.mechanism": "SCRAM-SHA-256",
                     "sasl.username": USER, "sasl.password": PASSWORD})
    return conf


def produce(conf: dict[str, str], topic: str, size: int, total: int) -> float:
    producer = Producer({**conf, "acks": 1, "linger.ms": 5, "batch.size": 1 << 20,
                         "queue.buffering.max.kbytes": 1 << 20})
    count = max(1, total // size)
    return count * size / MB / produce_all(producer, topic, [os.urandom(size)], count,
                                           flush_timeout=120)


def consume(conf: dict[str, str], topic: str, size: int, total: int) -> float:
    consumer = Consumer({**conf, "group.id": uuid.uuid4().hex, "enable.auto.commit": False,
                         "fetch.max.bytes": 50 * MB})
    consumer.assign([TopicPartition(topic, 0, 0)])
    count, received = max(1, total // size), 0
    started = time.perf_counter()
    while received < count:
        for message in consumer.consume(10_000, 0.1):
            if not message.error():
                received += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return count * size / MB / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.security", args.write_docs):
        total = args.megabytes * MB
        with tempfile.TemporaryDirectory(prefix="kafkalite-bench-security-") as work:
            process, addresses, ca = start_broker(Path(work))
            try:
                print(f"{'case':<22} {'PLAINTEXT MB/s':>15} {'SASL_SSL MB/s':>14} {'ratio':>6}")
                for size in RECORD_SIZES:
                    for action in (produce, consume):
                        best: dict[str, float] = {}
                        for protocol in ("PLAINTEXT", "SASL_SSL"):
                            conf = client_conf(protocol, addresses[protocol], ca)
                            topic = f"bench-{protocol.lower()}-{size}"
                            runs = []
                            for _ in range(args.repeat):
                                if action is produce:
                                    topic = f"bench-{protocol.lower()}-{size}-{uuid.uuid4().hex}"
                                    runs.append(produce(conf, topic, size, total))
                                else:
                                    if not runs:
                                        produce(conf, topic, size, total)
                                    runs.append(consume(conf, topic, size, total))
                            best[protocol] = max(runs)
                        name = f"{action.__name__} {size // 1024} KB"
                        print(f"{name:<22} {best['PLAINTEXT']:>15.1f} {best['SASL_SSL']:>14.1f} "
                              f"{best['SASL_SSL'] / best['PLAINTEXT']:>6.2f}", flush=True)
            finally:
                process.terminate()
                process.wait(30)
        return 0


if __name__ == "__main__":
    sys.exit(main())
