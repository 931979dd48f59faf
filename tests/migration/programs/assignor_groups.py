"""Assignors by kafka-python's module paths: two members of a group with the round-robin
assignor split a topic, and a consumer without a group_id subscribes to the whole topic."""

import json
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC, GROUP = f"{PREFIX}-work", f"{PREFIX}-workers"

admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
admin.create_topics([NewTopic(TOPIC, 4, 1)])
admin.close()
producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
for p in range(4):
    producer.send(TOPIC, b"job-%d" % p, partition=p)
producer.close()


def member():
    return KafkaConsumer(TOPIC, bootstrap_servers=BOOTSTRAP, group_id=GROUP,
                         auto_offset_reset="earliest", session_timeout_ms=10000,
                         partition_assignment_strategy=[RoundRobinPartitionAssignor,
                                                        RangePartitionAssignor])


a, b = member(), member()
while len(a.assignment()) + len(b.assignment()) != 4 or not a.assignment() or \
        not b.assignment():
    a.poll(timeout_ms=200)
    b.poll(timeout_ms=200)
split = sorted([len(a.assignment()), len(b.assignment())])
a.close()
b.close()

loner = KafkaConsumer(bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest")
loner.subscribe(topics=[TOPIC])
values = []
while len(values) < 4:
    for records in loner.poll(timeout_ms=1000).values():
        values.extend(r.value.decode() for r in records)
loner_assignment = sorted(tp.partition for tp in loner.assignment())
loner.close()
print("RESULT " + json.dumps({"split": split, "loner": loner_assignment,
                              "values": sorted(values)}))
