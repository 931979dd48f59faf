"""Manual commits with kafka-python's OffsetAndMetadata(offset, None, -1), committed(),
and a second consumer of the same group resuming where the first committed."""

import json
import sys

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC, GROUP = f"{PREFIX}-orders", f"{PREFIX}-billing"
tp = TopicPartition(TOPIC, 0)

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
for i in range(10):
    producer.send(TOPIC, b"order-%d" % i)
producer.close()


def consumer():
    return KafkaConsumer(TOPIC, bootstrap_servers=BOOTSTRAP, group_id=GROUP,
                         auto_offset_reset="earliest", enable_auto_commit=False)


first = consumer()
taken = []
while len(taken) < 4:
    for records in first.poll(timeout_ms=1000, max_records=4 - len(taken)).values():
        taken.extend(r.value.decode() for r in records)
first.commit({tp: OffsetAndMetadata(4, None, -1)})
committed = first.committed(tp)
meta = first.committed(tp, metadata=True)
group = first.group_metadata()
first.close()

second = consumer()
rest = []
while len(rest) < 6:
    for records in second.poll(timeout_ms=1000).values():
        rest.extend(r.value.decode() for r in records)
second.commit()
final = second.committed(tp, timeout_ms=5000)
second.close()
print("RESULT " + json.dumps({"taken": taken, "committed": committed,
                              "metadata_offset": meta.offset, "group": group.group_id == GROUP,
                              "rest": rest, "final": final}))
