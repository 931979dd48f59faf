"""kafka-python's transactional producer against a three-broker cluster, where partitions,
the group and the transactional id are led by different brokers: every first batch of a
transaction on a partition is verified with the coordinator (KIP-890), in process or with
AddPartitionsToTxn v4, and its TxnOffsetCommit too."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentPartition
from kafka import KafkaProducer
from kafka import TopicPartition as KafkaPartition
from kafka.structs import OffsetAndMetadata
from txn_helpers import TXN_SETTINGS, read_all

from kafkalite_server import EmbeddedCluster

TOPIC = "kp-txn"


def test_kafka_python_commits_and_aborts_on_three_brokers(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    cluster = cluster_factory(3, **TXN_SETTINGS)
    cluster.create_topic(TOPIC, 3, 2)
    bootstrap = cluster.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-writer")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for partition in range(3):
            producer.send(TOPIC, f"kept-{partition}".encode(), partition=partition)
        producer.send_offsets_to_transaction(
            {KafkaPartition(TOPIC, 0): OffsetAndMetadata(5, "", -1)}, "kp-group")
        producer.commit_transaction()
        producer.begin_transaction()
        for partition in range(3):
            producer.send(TOPIC, f"dropped-{partition}".encode(), partition=partition)
        producer.abort_transaction()
    finally:
        producer.close()

    committed = read_all(bootstrap, TOPIC, "read_committed", partitions=3)
    assert sorted(committed) == [b"kept-0", b"kept-1", b"kept-2"]
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "kp-group", "log_level": 3})
    try:
        [offset] = group.committed([ConfluentPartition(TOPIC, 0)], timeout=15)
        assert offset.offset == 5
    finally:
        group.close()
