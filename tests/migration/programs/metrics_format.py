"""kafka-python 3.0's benchmark scripts format producer.metrics() and consumer.metrics()
with fixed names; the names the issue lists must be there with real values."""

import json
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-metered"

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, compression_type="gzip", linger_ms=5)
for _ in range(500):
    producer.send(TOPIC, b"m" * 100, partition=0)
producer.flush()
produced = producer.metrics()["producer-metrics"]
# kafka-python's benchmarks/producer_performance.py line:
producer_line = ("{record-send-rate:.0f} records/sec ({byte-rate:.0f} B/sec),"
                 " {request-rate:.0f} avg requests/sec,"
                 " {request-latency-avg:.0f}ms avg latency,"
                 " {throttle-time-max:.0f}ms max throttle,"
                 " {record-size-avg:.0f} avg record size,"
                 " {batch-size-avg:.0f} avg batch size,"
                 " {records-per-request-avg:.0f} avg records/req").format(**produced)
producer.close()

consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=f"{PREFIX}-meters",
                         auto_offset_reset="earliest", enable_auto_commit=False)
consumer.assign([TopicPartition(TOPIC, 0)])
seen = 0
for _ in range(100):
    seen += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
    if seen >= 500:
        break
consumer.commit()
metrics = consumer.metrics()
fetched = metrics["consumer-fetch-manager-metrics"]
# kafka-python's benchmarks/consumer_performance.py line:
consumer_line = ("{records-consumed-rate:.0f} records/sec ({bytes-consumed-rate:.0f} B/sec),"
                 " {fetch-latency-avg:.0f}ms avg latency,"
                 " {fetch-rate:.0f} avg fetch requests/sec,"
                 " {fetch-size-avg:.0f} avg fetch size,"
                 " {records-lag-max:.0f} max record lag,"
                 " {records-per-request-avg:.0f} avg records/req").format(**fetched)
coordinator = metrics["consumer-coordinator-metrics"]
consumer.close()

positive = {
    "producer": {name: produced[name] > 0 for name in (
        "record-send-rate", "byte-rate", "request-latency-avg", "request-latency-max",
        "batch-size-avg", "compression-rate-avg")},
    "producer-zero": {name: produced[name] == 0 for name in (
        "record-error-rate", "requests-in-flight")},
    "consumer": {name: fetched[name] > 0 for name in ("fetch-latency-avg", "fetch-rate")},
    # kafka-python's windowed consumed rates can read 0 right after the last poll
    "consumer-numbers": {name: isinstance(fetched[name], (int, float)) for name in (
        "records-consumed-rate", "bytes-consumed-rate")},
    "coordinator": {"commit-latency-avg": coordinator["commit-latency-avg"] > 0,
                    "assigned-partitions": coordinator["assigned-partitions"]},
    "compressed": produced["compression-rate-avg"] < 1,
    "lag": fetched["records-lag-max"] >= 0,
}
print(producer_line, consumer_line, sep="\n", file=sys.stderr)
print("RESULT " + json.dumps({"seen": seen, **positive}))
