"""The admin client: create topics (and a duplicate), grow one, describe it and the
cluster, delete records, read a group's offsets and description, delete the topics."""

import asyncio
import json
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC, OTHER, GROUP = f"{PREFIX}-invoices", f"{PREFIX}-scratch", f"{PREFIX}-billing"
TP = TopicPartition(TOPIC, 0)


def short(name: str) -> str:
    """A name without the run's prefix (the two runs use different prefixes)."""
    return name.removeprefix(f"{PREFIX}-")


async def fill_and_commit() -> None:
    async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP) as producer:
        for i in range(6):
            await producer.send_and_wait(TOPIC, f"invoice {i}".encode(), partition=0)
    consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=BOOTSTRAP, group_id=GROUP,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        seen = 0
        while seen < 4:
            batches = await consumer.getmany(timeout_ms=2000)
            seen += sum(len(records) for records in batches.values())
        await consumer.commit({TP: 4})
    finally:
        await consumer.stop()


async def main() -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP, request_timeout_ms=10000)
    await admin.start()
    try:
        created = await admin.create_topics([NewTopic(TOPIC, 1, 1), NewTopic(OTHER, 2, 1)])
        again = await admin.create_topics([NewTopic(TOPIC, 1, 1)])
        grown = await admin.create_partitions({TOPIC: NewPartitions(2)})
        (described,) = await admin.describe_topics([TOPIC])
        await fill_and_commit()
        low = await admin.delete_records({TP: RecordsToDelete(before_offset=3)})
        groups = [g for g in await admin.list_consumer_groups() if g[0] == GROUP]
        offsets = await admin.list_consumer_group_offsets(GROUP)
        group_answers = await admin.describe_consumer_groups([GROUP])
        cluster = await admin.describe_cluster()
        topics = await admin.list_topics()
        deleted = await admin.delete_topics([OTHER])
        after = await admin.list_topics()
    finally:
        await admin.close()
    print("RESULT " + json.dumps({
        "created": sorted((short(t["topic"]), t["error_code"], t["error_message"])
                          for t in created.to_object()["topic_errors"]),
        "again": [(short(t), code) for t, code, _ in again.topic_errors],
        "grown": [(short(t), code, message) for t, code, message in grown.topic_errors],
        "described": {"topic": short(described["topic"]), "internal": described["is_internal"],
                      "partitions": sorted((p["partition"], p["error_code"], len(p["replicas"]))
                                           for p in described["partitions"])},
        "low": {f"{short(tp.topic)}-{tp.partition}": offset for tp, offset in low.items()},
        "groups": [(short(g), protocol_type) for g, protocol_type in groups],
        "offsets": {f"{short(tp.topic)}-{tp.partition}": [meta.offset, meta.metadata]
                    for tp, meta in offsets.items()},
        "group": [(code, short(group), state, protocol_type, len(members))
                  for answer in group_answers
                  for code, group, state, protocol_type, _, members in answer.groups],
        "cluster": {"brokers": len(cluster["brokers"]), "has_id": bool(cluster["cluster_id"]),
                    "controller_known": cluster["controller_id"] >= 0},
        "topics_listed": TOPIC in topics and OTHER in topics,
        "deleted": [(short(t), code) for t, code in deleted.topic_error_codes],
        "gone": OTHER not in after,
    }))


asyncio.run(main())
