"""asyncio clients: kafkalite.aio against aiokafka, producing and consuming 100 B records.

In one run, against one kafkalite-server subprocess: each client produces N records (100-byte
values, no key, no compression, linger 5 ms, acks=1, 16 KB batches) with ``await send()``
per record and one ``flush()``, each to a fresh topic; then each reads the same pre-filled
topic (N records in one partition) from offset 0 by assignment with ``getmany``. The clock
runs from the first send to the end of the flush, and from the first ``getmany`` to the
last record. One line per client: records/s of wall-clock time and of this process's CPU
time (the client's own cost: the broker runs in another process; on a loaded machine the
wall-clock rate also measures the other processes), and the ratios of kafkalite.aio to
aiokafka, best of ``--repeat`` interleaved rounds.

    python -m benchmarks.aio [--records N] [--repeat R] [--write-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

from benchmarks.clients import kafkalite_server
from benchmarks.report import add_write_docs, documented

VALUE = b"v" * 100
SETTINGS: dict[str, Any] = {"linger_ms": 5, "acks": 1, "max_batch_size": 16384}


def _classes(client: str) -> tuple[Any, Any, Any]:
    if client == "kafkalite.aio":
        import kafkalite.aio as module
    else:
        import aiokafka as module  # type: ignore[no-redef]
    return module.AIOKafkaProducer, module.AIOKafkaConsumer, module.TopicPartition


async def produce(client: str, bootstrap: str, topic: str, count: int) -> tuple[float, float]:
    """(wall-clock, CPU) seconds from the first send to the end of the flush."""
    producer_class, _, _ = _classes(client)
    producer = producer_class(bootstrap_servers=bootstrap, **SETTINGS)
    await producer.start()
    try:
        await producer.send_and_wait(topic, VALUE)  # metadata and connection before the clock
        send = producer.send
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            await send(topic, VALUE)
        await producer.flush()
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        await producer.stop()


async def consume(client: str, bootstrap: str, topic: str, count: int) -> tuple[float, float]:
    """(wall-clock, CPU) seconds from the first getmany to the last record."""
    _, consumer_class, partition_class = _classes(client)
    consumer = consumer_class(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                              enable_auto_commit=False)
    await consumer.start()
    try:
        partition = partition_class(topic, 0)
        consumer.assign([partition])
        seen = 0
        start, cpu = time.perf_counter(), time.process_time()
        while seen < count:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                seen += len(records)
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        await consumer.stop()


def race(runs: dict[str, Callable[[int], tuple[float, float]]], count: int, repeat: int,
         header: str) -> None:
    """Every client ``repeat`` rounds, interleaved; each one's best wall and CPU times."""
    best: dict[str, tuple[float, float]] = {}
    for round_ in range(repeat):
        for name, run in runs.items():
            wall, cpu = run(round_)
            old = best.get(name, (wall, cpu))
            best[name] = (min(old[0], wall), min(old[1], cpu))
    print(f"{header} best of {repeat}")
    ours = best["kafkalite.aio"]
    for name, (wall, cpu) in best.items():
        print(f"  {name:14s} {count / wall:10,.0f} records/s wall  {count / cpu:10,.0f} "
              f"records/s CPU   kafkalite.aio/{name} = {wall / ours[0]:4.2f} wall, "
              f"{cpu / ours[1]:4.2f} CPU")


CLIENTS = ("kafkalite.aio", "aiokafka")


def bench(count: int, repeat: int) -> None:
    with kafkalite_server() as bootstrap:
        producers: dict[str, Callable[[int], tuple[float, float]]] = {
            client: lambda round_, client=client: asyncio.run(
                produce(client, bootstrap, f"bench-aio-{client}-{round_}", count))
            for client in CLIENTS}
        race(producers, count, repeat, f"produce: records={count} value=100B linger_ms=5 "
                                       "acks=1")
        asyncio.run(produce("kafkalite.aio", bootstrap, "bench-aio-consume", count))
        consumers: dict[str, Callable[[int], tuple[float, float]]] = {
            client: lambda _round, client=client: asyncio.run(
                consume(client, bootstrap, "bench-aio-consume", count))
            for client in CLIENTS}
        race(consumers, count, repeat, f"consume: records={count} value=100B one partition")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=1)
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.aio", args.write_docs):
        bench(args.records, args.repeat)


if __name__ == "__main__":
    main()
