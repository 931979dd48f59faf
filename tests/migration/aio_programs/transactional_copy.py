"""A transactional copy (consume, transform, produce; the input offsets committed in the
same transaction with send_offsets_to_transaction), one aborted transaction, then a
read_committed consumer that sees only the committed copy."""

import asyncio
import json
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
SOURCE, TARGET, GROUP = f"{PREFIX}-in", f"{PREFIX}-out", f"{PREFIX}-copier"


async def fill() -> None:
    async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP) as producer:
        for i in range(12):
            await producer.send(SOURCE, f"order {i}".encode(), partition=0)
        await producer.flush()


async def copy() -> dict:
    consumer = AIOKafkaConsumer(SOURCE, bootstrap_servers=BOOTSTRAP, group_id=GROUP,
                                auto_offset_reset="earliest", enable_auto_commit=False,
                                isolation_level="read_committed")
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP,
                                transactional_id=f"{PREFIX}-copy-txn")
    await consumer.start()
    await producer.start()
    copied = 0
    try:
        while copied < 12:
            batches = await consumer.getmany(timeout_ms=2000, max_records=5)
            if not batches:
                continue
            async with producer.transaction():
                offsets = {}
                for tp, messages in batches.items():
                    for msg in messages:
                        await producer.send(TARGET, msg.value.upper(), partition=0)
                    offsets[tp] = messages[-1].offset + 1
                    copied += len(messages)
                await producer.send_offsets_to_transaction(offsets, GROUP)
        try:
            async with producer.transaction():
                await producer.send(TARGET, b"never visible", partition=0)
                raise RuntimeError("abort this one")
        except RuntimeError:
            pass
        committed = await consumer.committed(TopicPartition(SOURCE, 0))
    finally:
        await producer.stop()
        await consumer.stop()
    return {"copied": copied, "committed": committed}


async def verify() -> list:
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest",
                                isolation_level="read_committed", enable_auto_commit=False)
    await consumer.start()
    tp = TopicPartition(TARGET, 0)
    consumer.assign([tp])
    seen = []
    try:
        end = (await consumer.end_offsets([tp]))[tp]
        while await consumer.position(tp) < end:
            batches = await consumer.getmany(timeout_ms=1000)
            seen += [m.value.decode() for m in batches.get(tp, [])]
        stable = consumer.last_stable_offset(tp) == end
    except KafkaError as exc:
        seen.append(type(exc).__name__)
        stable = False
    finally:
        await consumer.stop()
    return [seen, stable]


async def main() -> None:
    await fill()
    result = await copy()
    seen, stable = await verify()
    print("RESULT " + json.dumps({**result, "seen": seen, "stable": stable}))


asyncio.run(main())
