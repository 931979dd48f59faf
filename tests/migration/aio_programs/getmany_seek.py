"""Manual assignment: getmany in batches, seek back, end and beginning offsets, highwater,
offsets_for_times, pause/resume, a batch from create_batch/send_batch."""

import asyncio
import json
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-ledger"
TP = TopicPartition(TOPIC, 0)


async def produce() -> dict:
    async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=5,
                                compression_type="gzip") as producer:
        futures = [await producer.send(TOPIC, f"entry {i}".encode(), partition=0,
                                       timestamp_ms=1_700_000_000_000 + i * 1000)
                   for i in range(50)]
        await producer.flush()
        offsets = [(await future).offset for future in futures]
        batch = producer.create_batch()
        for i in range(5):
            batch.append(key=None, value=f"bulk {i}".encode(),
                         timestamp=1_700_000_100_000 + i)
        batch.close()
        bulk = await (await producer.send_batch(batch, TOPIC, partition=0))
        return {"offsets": offsets, "bulk_offset": bulk.offset,
                "partitions": sorted(await producer.partitions_for(TOPIC))}


async def consume() -> dict:
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest",
                                enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TP])
        end = (await consumer.end_offsets([TP]))[TP]
        beginning = (await consumer.beginning_offsets([TP]))[TP]
        values = []
        while len(values) < end:
            batches = await consumer.getmany(TP, timeout_ms=2000, max_records=7)
            values += [m.value.decode() for m in batches.get(TP, [])]
        consumer.seek(TP, 10)
        again = await consumer.getmany(timeout_ms=2000, max_records=3)
        position = await consumer.position(TP)
        found = await consumer.offsets_for_times({TP: 1_700_000_020_000})
        consumer.pause(TP)
        paused = await consumer.getmany(timeout_ms=200)
        consumer.resume(TP)
        await consumer.seek_to_beginning(TP)
        first = await consumer.getone()
        return {"end": end, "beginning": beginning, "values": values,
                "again": [m.offset for m in again[TP]], "position": position,
                "for_time": found[TP].offset, "paused": len(paused),
                "highwater": consumer.highwater(TP), "first": first.offset,
                "paused_set": [list(tp) for tp in consumer.paused()]}
    finally:
        await consumer.stop()


async def main() -> None:
    produced = await produce()
    consumed = await consume()
    print("RESULT " + json.dumps({**produced, **consumed}))


asyncio.run(main())
