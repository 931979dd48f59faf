"""kafka-python's README consumer snippets: iterate a group consumer with a JSON value
deserializer, then read manually assigned partitions with poll()."""

import json
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-my_favorite_topic"

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP,
                         value_serializer=lambda m: json.dumps(m).encode("ascii"))
for i in range(5):
    producer.send(TOPIC, {"key": i})
producer.flush()
producer.close()

consumer = KafkaConsumer(TOPIC, group_id=f"{PREFIX}-my_favorite_group",
                         bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest",
                         value_deserializer=lambda m: json.loads(m.decode("ascii")),
                         consumer_timeout_ms=3000)
seen = []
for msg in consumer:
    seen.append((msg.topic == TOPIC, msg.partition, msg.offset, msg.key, msg.value))
    if len(seen) == 5:
        break
consumer.close()

consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP,
                         value_deserializer=lambda m: json.loads(m.decode("ascii")))
consumer.assign([TopicPartition(TOPIC, 0)])
consumer.seek_to_beginning()
polled = []
while len(polled) < 5:
    for _tp, records in consumer.poll(timeout_ms=1000).items():
        polled.extend(r.value["key"] for r in records)
consumer.close()
print("RESULT " + json.dumps({"iterated": seen, "polled": polled}))
