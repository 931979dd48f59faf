"""kafka.serializer classes: the bundled JsonSerializer and a user Serializer subclass with
kafka-python 3's (topic, headers, data) signature, on both producer and consumer."""

import json
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.serializer import Deserializer, JsonSerializer, Serializer

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-typed"


class UpperSerializer(Serializer):
    def serialize(self, topic, headers, data):
        return data.upper().encode()


class ReversedDeserializer(Deserializer):
    def deserialize(self, topic, headers, data):
        return data.decode()[::-1]


producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, key_serializer=UpperSerializer(),
                         value_serializer=JsonSerializer())
for i in range(3):
    producer.send(TOPIC, key=f"k{i}", value={"i": i, "tags": ["a", "b"]})
producer.send(TOPIC, key="tomb", value=None)
producer.close()

consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, key_deserializer=ReversedDeserializer(),
                         value_deserializer=JsonSerializer(), auto_offset_reset="earliest")
consumer.assign([TopicPartition(TOPIC, 0)])
got = []
while len(got) < 4:
    for records in consumer.poll(timeout_ms=1000).values():
        got.extend([r.key, r.value] for r in records)
consumer.close()
print("RESULT " + json.dumps({"records": got}))
