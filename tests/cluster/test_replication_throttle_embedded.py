"""A reassignment behind a leader replication throttle (KIP-73): 8 MB at 2 MB/s take at
least 3 s to copy (the throttle lets about one window's worth through at once)."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from kafkalite.admin import AdminClient, ConfigResource, ConfigResourceType, NewTopic
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster


def test_a_throttled_move_keeps_to_its_rate() -> None:
    with EmbeddedCluster(num_brokers=2) as cluster, \
            AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("t", replica_assignments={0: [0]}, topic_configs={
            "leader.replication.throttled.replicas": "0:0"})], wait_for_metadata=True)
        admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "0", {
            "leader.replication.throttled.rate": str(2 * 1024 * 1024)})])
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20})
        for _ in range(128):
            producer.produce("t", b"x" * 65536)
            producer.poll(0)
        assert producer.flush(30) == 0
        started = time.monotonic()
        key = TopicPartition("t", 0)
        assert admin.alter_partition_reassignments({key: [0, 1]}) == {key: None}
        deadline = started + 60
        while admin.list_partition_reassignments() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not admin.list_partition_reassignments()
        assert time.monotonic() - started >= 3.0
