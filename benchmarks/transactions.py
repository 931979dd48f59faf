"""Transactional produce throughput next to idempotent produce, in one run.

Against one embedded kafkalite broker (in this process, a 1-partition topic per case),
kafkalite's Producer sends 100-byte records: idempotently (``acks=all``, no
transactions), then in transactions of 100, 1,000 and 10,000 records (begin, send,
commit). Each case sends the same number of records; the figure is records per second,
end to end (the transaction cases include AddPartitionsToTxn and EndTxn with its markers).

    python -m benchmarks.transactions [--records N]    (from the repository root)
"""

from __future__ import annotations

import argparse
import time

from benchmarks.report import add_write_docs, documented
from kafkalite import Producer
from kafkalite_server.embedded import EmbeddedCluster

VALUE = b"v" * 100
TRANSACTION_SIZES = (100, 1_000, 10_000)


def idempotent(bootstrap: str, records: int) -> float:
    with Producer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        producer.send("idem", VALUE, partition=0).get(30)  # metadata and producer id
        started = time.perf_counter()
        for _ in range(records):
            producer.send("idem", VALUE, partition=0)
        producer.flush()
        return records / (time.perf_counter() - started)


def transactional(bootstrap: str, records: int, size: int) -> float:
    topic = f"txn-{size}"
    with Producer(bootstrap_servers=bootstrap, linger_ms=5,
                  transactional_id=f"bench-{size}") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, VALUE, partition=0)
        producer.commit_transaction()
        started = time.perf_counter()
        for _ in range(max(records // size, 1)):
            producer.begin_transaction()
            for _ in range(size):
                producer.send(topic, VALUE, partition=0)
            producer.commit_transaction()
        return max(records // size, 1) * size / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    add_write_docs(parser)
    args = parser.parse_args()
    records = args.records
    with documented("benchmarks.transactions", args.write_docs):
        with EmbeddedCluster(config={"transaction.state.log.num.partitions": "3"}) as cluster:
            bootstrap = cluster.bootstrap_servers
            rows = [("idempotent, no transactions", idempotent(bootstrap, records))]
            for size in TRANSACTION_SIZES:
                rows.append((f"transactions of {size:,} records",
                             transactional(bootstrap, records, size)))
        base = rows[0][1]
        print(f"{'case':<34}{'records/s':>12}{'vs idempotent':>16}")
        for name, rate in rows:
            print(f"{name:<34}{rate:>12,.0f}{rate / base:>15.2f}x")


if __name__ == "__main__":
    main()
