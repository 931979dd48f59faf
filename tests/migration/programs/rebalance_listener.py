"""A ConsumerRebalanceListener subclass that seeks on assignment, the usage-docs pattern for
keeping offsets outside Kafka."""

import json
import sys

from kafka import ConsumerRebalanceListener, KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC = f"{PREFIX}-ledger"

admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])
admin.close()
producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
for p in range(3):
    for i in range(4):
        producer.send(TOPIC, b"%d-%d" % (p, i), partition=p)
producer.close()

external_offsets = {0: 1, 1: 2, 2: 3}


class SeekFromStore(ConsumerRebalanceListener):
    def __init__(self, consumer):
        self.consumer = consumer
        self.assigned = []

    def on_partitions_revoked(self, revoked):
        pass

    def on_partitions_assigned(self, assigned):
        self.assigned.extend(sorted(tp.partition for tp in assigned))
        for tp in assigned:
            self.consumer.seek(tp, external_offsets[tp.partition])


consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=f"{PREFIX}-ledger-app",
                         enable_auto_commit=False)
listener = SeekFromStore(consumer)
consumer.subscribe([TOPIC], listener=listener)
values = []
while len(values) < 6:
    for records in consumer.poll(timeout_ms=1000).values():
        values.extend(r.value.decode() for r in records)
consumer.close()
print("RESULT " + json.dumps({"assigned": listener.assigned, "values": sorted(values)}))
