"""The shape of kafka-python's consumer performance script: consumer settings as key=value
strings, consumer_timeout_ms, iterate until num_records, metrics() at the end."""

import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-perf"
NUM_RECORDS = 3000

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=5)
for i in range(NUM_RECORDS):
    producer.send(TOPIC, b"%06d" % i)
producer.close()

props = {"group_id": f"{PREFIX}-perf-group", "fetch_max_wait_ms": 100,
         "metrics_sample_window_ms": 1000, "enable_auto_commit": True}
props["bootstrap_servers"] = BOOTSTRAP
props["auto_offset_reset"] = "earliest"
props.setdefault("consumer_timeout_ms", 10000)
consumer = KafkaConsumer(TOPIC, **props)
start = time.monotonic()
records = 0
total_bytes = 0
for message in consumer:
    records += 1
    total_bytes += len(message.value)
    if records >= NUM_RECORDS:
        break
elapsed = time.monotonic() - start
metrics = consumer.metrics()
consumer.close()
print(f"{records / elapsed:.0f} records/s", file=sys.stderr)
print("RESULT " + json.dumps({
    "records": records, "bytes": total_bytes,
    "fetch_metrics": any(group.endswith("fetch-manager-metrics") for group in metrics),
}))
