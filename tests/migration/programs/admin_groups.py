"""Group and topic administration in kafka-python 3.0's shapes: create_topics with the dict
form and with plain names, create_partitions with a count, list_groups and describe_groups
read as dicts, and list_group_offsets with one group id as a string."""

import json
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.errors import TopicAlreadyExistsError

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC, EXTRA, GROUP = f"{PREFIX}-billing", f"{PREFIX}-scratch", f"{PREFIX}-billing-v3"

admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
created = admin.create_topics({TOPIC: {"num_partitions": 3, "replication_factor": 1,
                                       "configs": {"retention.ms": "3600000"}}},
                              wait_for_metadata=True)
named = admin.create_topics([EXTRA])
errors = []
try:
    admin.create_topics([EXTRA])
except TopicAlreadyExistsError:
    errors.append("TopicAlreadyExistsError")
admin.create_partitions({EXTRA: 2})

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
for n in range(6):
    producer.send(TOPIC, b"invoice %d" % n, partition=n % 3)
producer.flush()
producer.close()

consumer = KafkaConsumer(TOPIC, bootstrap_servers=BOOTSTRAP, group_id=GROUP,
                         client_id="billing-worker", auto_offset_reset="earliest",
                         enable_auto_commit=False,
                         partition_assignment_strategy=[RangePartitionAssignor])
read = 0
deadline = time.monotonic() + 30
while read < 6 and time.monotonic() < deadline:
    read += sum(len(records) for records in consumer.poll(timeout_ms=200).values())
consumer.commit()

ours = [g for g in admin.list_groups() if g["group_id"].startswith(PREFIX)]
stable = [g["group_id"] for g in admin.list_groups(states_filter=["Stable"])
          if g["group_id"].startswith(PREFIX)]
described = admin.describe_groups([GROUP])[GROUP]
members = described["members"]
one_group = admin.list_group_offsets(GROUP)
several = admin.list_group_offsets([GROUP, f"{PREFIX}-never-ran"])
consumer.close()
after = admin.describe_groups([GROUP])[GROUP]
deleted = admin.delete_topics([EXTRA])
admin.close()

print("RESULT " + json.dumps({
    "created": [(t["name"], t["error_code"]) for t in created["topics"]],
    "named": [(t["name"], t["error_code"]) for t in named["topics"]],
    "errors": errors,
    "read": read,
    "groups": [g["group_id"] for g in ours],
    "listing_keys": sorted(ours[0].keys()),
    "listing": [[g["protocol_type"], g["group_state"], g["group_type"]] for g in ours],
    "stable": stable,
    "described_keys": sorted(described.keys()),
    "described": [described["group_id"], described["group_state"], described["protocol_type"],
                  described["protocol_data"], described["error"]],
    "member_keys": sorted(members[0].keys()),
    "members": [[m["client_id"], m["client_host"]] for m in members],
    "offsets": {group: sorted([tp.topic, tp.partition, meta.offset]
                              for tp, meta in found.items())
                for group, found in one_group.items()},
    "several": {group: len(found) for group, found in several.items()},
    "after_close": [after["group_state"], len(after["members"])],
    "deleted": [(t["name"], t["error_code"]) for t in deleted["topics"]],
}).replace(PREFIX, "<prefix>"))
