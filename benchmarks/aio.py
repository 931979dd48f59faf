"""asyncio clients: kafkalite.aio against aiokafka, producing and consuming 100 B records.

In one run, against one kafkalite-server subprocess: each client produces N records (100-byte
values, no key, no compression, linger 5 ms, acks=1, 16 KB batches) with ``await send()``
per record and one ``flush()``, each to a fresh topic; then each reads the same pre-filled
topic (N records in one partition) from offset 0 by assignment with ``getmany``. The clock
runs from the first send to the end of the flush, and from the first ``getmany`` to the
last record. One line per client: records/s and the ratio of kafkalite.aio to aiokafka.

    python -m benchmarks.aio [--records N] [--repeat R] [--write-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

from benchmarks.clients import kafkalite_server, race
from benchmarks.report import add_write_docs, documented

VALUE = b"v" * 100
SETTINGS: dict[str, Any] = {"linger_ms": 5, "acks": 1, "max_batch_size": 16384}


def _classes(client: str) -> tuple[Any, Any, Any]:
    if client == "kafkalite":
        import kafkalite.aio as module
    else:
        import aiokafka as module  # type: ignore[no-redef]
    return module.AIOKafkaProducer, module.AIOKafkaConsumer, module.TopicPartition


async def produce(client: str, bootstrap: str, topic: str, count: int) -> float:
    producer_class, _, _ = _classes(client)
    producer = producer_class(bootstrap_servers=bootstrap, **SETTINGS)
    await producer.start()
    try:
        await producer.send_and_wait(topic, VALUE)  # metadata and connection before the clock
        send = producer.send
        start = time.perf_counter()
        for _ in range(count):
            await send(topic, VALUE)
        await producer.flush()
        return time.perf_counter() - start
    finally:
        await producer.stop()


async def consume(client: str, bootstrap: str, topic: str, count: int) -> float:
    _, consumer_class, partition_class = _classes(client)
    consumer = consumer_class(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                              enable_auto_commit=False)
    await consumer.start()
    try:
        partition = partition_class(topic, 0)
        consumer.assign([partition])
        seen = 0
        start = time.perf_counter()
        while seen < count:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                seen += len(records)
        return time.perf_counter() - start
    finally:
        await consumer.stop()


def bench(count: int, repeat: int) -> None:
    with kafkalite_server() as bootstrap:
        producers: dict[str, Callable[[int], float]] = {
            client: lambda round_, client=client: asyncio.run(
                produce(client, bootstrap, f"bench-aio-{client}-{round_}", count))
            for client in ("kafkalite", "aiokafka")}
        race(producers, count, repeat, f"produce: records={count} value=100B linger_ms=5 "
                                       "acks=1 (kafkalite = kafkalite.aio)")
        asyncio.run(produce("kafkalite", bootstrap, "bench-aio-consume", count))
        consumers: dict[str, Callable[[int], float]] = {
            client: lambda _round, client=client: asyncio.run(
                consume(client, bootstrap, "bench-aio-consume", count))
            for client in ("kafkalite", "aiokafka")}
        race(consumers, count, repeat, f"consume: records={count} value=100B one partition "
                                       "(kafkalite = kafkalite.aio)")


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
