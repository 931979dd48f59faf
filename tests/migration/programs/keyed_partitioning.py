"""kafka-python-only settings (api_version, socket buffers, DNS lookup, metrics windows) and
keyed records: the murmur2 partition of each key, which must not change with the client."""

import json
import socket
import sys

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.partitioner import DefaultPartitioner, murmur2

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-keyed"

admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
admin.create_topics([NewTopic(TOPIC, 6, 1)])
admin.close()
producer = KafkaProducer(
    bootstrap_servers=BOOTSTRAP, api_version=(3, 0, 0), client_dns_lookup="use_all_dns_ips",
    send_buffer_bytes=131072, receive_buffer_bytes=65536,
    socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    connections_max_idle_ms=30000, metrics_num_samples=2, metrics_sample_window_ms=30000,
    security_protocol="PLAINTEXT", retries=float("inf"), partitioner=DefaultPartitioner())
placement = {}
for key in ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]:
    placement[key] = producer.send(TOPIC, key=key.encode(), value=b"1").get(timeout=10).partition
producer.close()
print("RESULT " + json.dumps({"placement": placement,
                              "murmur2_alice": murmur2(b"alice") & 0x7FFFFFFF}))
