"""Manual assignment and offset lookups, as in kafka-python's usage docs: beginning and end
offsets, offsets_for_times, position, seek, highwater, timeout_ms everywhere."""

import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-lookups"
tp = TopicPartition(TOPIC, 0)

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
base = int(time.time() * 1000) - 100000
for i in range(10):
    producer.send(TOPIC, b"v%d" % i, partition=0, timestamp_ms=base + i * 1000)
producer.flush()
producer.close()

consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False)
consumer.assign([tp])
result = {
    "partitions": sorted(consumer.partitions_for_topic(TOPIC)),
    "beginning": consumer.beginning_offsets([tp], timeout_ms=5000)[tp],
    "end": consumer.end_offsets([tp], timeout_ms=5000)[tp],
    "at_time": consumer.offsets_for_times({tp: base + 4500}, timeout_ms=5000)[tp].offset,
    "after_end": consumer.offsets_for_times({tp: base + 10 ** 9})[tp],
}
consumer.seek(tp, 7)
result["position_after_seek"] = consumer.position(tp, timeout_ms=5000)
records = []
while len(records) < 3:
    for batch in consumer.poll(timeout_ms=1000, max_records=2).values():
        records.extend(r.value.decode() for r in batch)
result["read"] = records
result["highwater"] = consumer.highwater(tp)
result["assignment"] = [p.partition for p in consumer.assignment()]
consumer.close(timeout_ms=5000)
print("RESULT " + json.dumps(result))
