"""aiokafka's README pair: send_and_wait from a producer, `async for` in a group consumer."""

import asyncio
import json
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-greetings"


async def produce() -> list:
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP)
    await producer.start()
    try:
        sent = []
        for i in range(20):
            metadata = await producer.send_and_wait(TOPIC, f"hello {i}".encode(),
                                                    key=str(i % 3).encode())
            sent.append((metadata.topic == TOPIC, metadata.partition, metadata.offset))
        return sent
    finally:
        await producer.stop()


async def consume() -> list:
    consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=BOOTSTRAP, group_id=f"{PREFIX}-g",
                                auto_offset_reset="earliest")
    await consumer.start()
    seen = []
    try:
        async for msg in consumer:
            seen.append((msg.partition, msg.offset, msg.key.decode(), msg.value.decode(),
                         msg.timestamp_type, msg.headers == [] or list(msg.headers) == []))
            if len(seen) == 20:
                break
        await consumer.commit()
        committed = {tp.partition: await consumer.committed(tp)
                     for tp in sorted(consumer.assignment())}
    finally:
        await consumer.stop()
    return [sorted(seen), sorted(committed.items())]


async def main() -> None:
    sent = await produce()
    seen, committed = await consume()
    print("RESULT " + json.dumps({"sent": sent, "seen": seen, "committed": committed}))


asyncio.run(main())
