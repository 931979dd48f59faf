"""kafka-python's README producer snippets: blocking sends, keys, JSON values, headers,
compression, futures with get(), callbacks, flush."""

import json
import sys

from kafka import KafkaProducer
from kafka.errors import KafkaError

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-fizzbuzz"

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
future = producer.send(TOPIC, b"some_message_bytes")
try:
    metadata = future.get(timeout=10)
except KafkaError:
    raise
first = (metadata.topic == TOPIC, metadata.partition, metadata.offset)
producer.send(TOPIC, key=b"foo", value=b"bar")
producer.send(TOPIC, value=b"c29tZSB2YWx1ZQ==", headers=[("content-encoding", b"base64")])
producer.flush()
producer.close()

json_producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, compression_type="gzip",
                              value_serializer=lambda v: json.dumps(v).encode("utf-8"),
                              key_serializer=str.encode)
results = []
for i in range(10):
    json_producer.send(TOPIC, key=str(i), value={"n": i}).add_callback(
        lambda md: results.append(md.offset))
json_producer.flush()
json_producer.close(timeout=5)
print("RESULT " + json.dumps({"first": first, "json_offsets": sorted(results)}))
