"""The shape of kafka-python's producer performance script: producer settings given as
key=value strings, a fixed number of records of a fixed size, a callback per record, a
stats snapshot from metrics() at the end."""

import json
import sys
import time

from kafka import KafkaProducer

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-perf"
NUM_RECORDS, RECORD_SIZE = 2000, 100


def parse_props(items):
    props = {}
    for item in items:
        key, value = item.split("=")
        for convert in (int, {"None": None, "True": True, "False": False}.__getitem__):
            try:
                value = convert(value)
                break
            except (ValueError, KeyError):
                pass
        props[key] = value
    return props


props = parse_props(["batch_size=16384", "linger_ms=5", "acks=1", "compression_type=gzip",
                     "metrics_sample_window_ms=5000", "max_in_flight_requests_per_connection=5",
                     "retries=3"])
producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, **props)
payload = b"x" * RECORD_SIZE
acked = []
failed = []
start = time.monotonic()
for _i in range(NUM_RECORDS):
    future = producer.send(TOPIC, payload)
    future.add_callback(lambda md: acked.append(md.offset))
    future.add_errback(failed.append)
producer.flush()
elapsed = time.monotonic() - start
metrics = producer.metrics()
producer.close()
print(f"{NUM_RECORDS / elapsed:.0f} records/s", file=sys.stderr)
print("RESULT " + json.dumps({
    "acked": len(acked), "failed": len(failed), "offsets": sorted(acked) == list(range(NUM_RECORDS)),
    "metric_groups": sorted(g for g in metrics if g == "producer-metrics"),
    "has_send_rate": "record-send-rate" in metrics["producer-metrics"],
}))
