"""Hanging-transaction tooling as kafka-python 3's admin offers it (KIP-664): a transactional
producer leaves a transaction open; the admin lists and describes it, finds the partition's
open transaction, aborts it, and a read_committed consumer then reads past it."""

import json
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import AbortTransactionSpec, NewTopic

BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2]
TOPIC, TXN_ID = f"{PREFIX}-ledger", f"{PREFIX}-writer"
TP = TopicPartition(TOPIC, 0)

admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])

stuck = KafkaProducer(bootstrap_servers=BOOTSTRAP, transactional_id=TXN_ID)
stuck.init_transactions()
stuck.begin_transaction()
stuck.send(TOPIC, b"never-committed", partition=0)
stuck.flush()

listings = [t for txns in admin.list_transactions().values() for t in txns
            if t.transactional_id == TXN_ID]
ongoing = admin.list_transactions(state_filters=["Ongoing"])
description = admin.describe_transactions([TXN_ID])[TXN_ID]
producers = admin.describe_producers([TP])[TP].active_producers
open_txns = [p for p in producers if p.current_transaction_start_offset >= 0]
# Every open transaction counts as hanging with a timeout that leaves no margin.
hanging = admin.find_hanging_transactions(max_transaction_timeout_ms=-5 * 60 * 1000)
for p in open_txns:
    admin.abort_transaction(AbortTransactionSpec(TP, p.producer_id, p.producer_epoch,
                                                 p.coordinator_epoch))
after = admin.describe_producers([TP])[TP].active_producers

plain = KafkaProducer(bootstrap_servers=BOOTSTRAP)
plain.send(TOPIC, b"after-abort", partition=0).get(timeout=10)
plain.close()
consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, isolation_level="read_committed",
                         auto_offset_reset="earliest")
consumer.assign([TP])
values = []
deadline = time.monotonic() + 15
while b"after-abort" not in values and time.monotonic() < deadline:
    for records in consumer.poll(timeout_ms=200).values():
        values.extend(r.value for r in records)
consumer.close()

print("RESULT " + json.dumps({
    "listed": [t.state.value for t in listings],
    "ongoing": TXN_ID in [t.transactional_id for txns in ongoing.values() for t in txns],
    "state": description.state.value,
    "partitions": sorted(f"{tp.topic}-{tp.partition}" for tp in description.topic_partitions),
    "open_at": [p.current_transaction_start_offset for p in open_txns],
    "hanging": [h["transactional_id"] for h in hanging if h["transactional_id"] == TXN_ID],
    "closed_after_abort": all(p.current_transaction_start_offset == -1 for p in after),
    "read_committed": [v.decode() for v in values],
}).replace(PREFIX, "<prefix>"))
stuck.close(timeout=1)
admin.close()
