"""One broker's log directory fills up (an injected ENOSPC at its one write seam, as
``tests/disk_faults.py`` does) in a three-broker cluster: only that broker's replicas go
offline; the controller hears of it (``/log_dir_event_notification``), moves the
leadership it held away and takes it out of the ISRs; writes with acks=all go on to every
partition; and every broker's Metadata, the failed one's included, names the real
leaders and lists the failed broker's replicas as offline."""

from __future__ import annotations

import functools

from disk_faults import FillingDisk
from polling import until

from kafkalite.admin import AdminClient, NewTopic
from kafkalite.producer import Producer
from kafkalite.protocol import ApiKey

TOPIC = "filling-up"
PARTITIONS = 3
_until = functools.partial(until, timeout=30, interval=0.05)


def _metadata(wire, address: str) -> dict[int, dict]:
    answer = wire(address).call(ApiKey.METADATA, 8, {"topics": [{"name": TOPIC}],
                                                     "allow_auto_topic_creation": False})
    return {p["partition_index"]: p for p in answer["topics"][0]["partitions"]}


def test_a_full_disk_on_one_broker_moves_its_leaderships_away(cluster_factory, wire):
    cluster = cluster_factory(3, min_insync_replicas="2")
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], wait_for_metadata=True)
    leaders = {p: cluster.brokers[0].metadata_cache.partition(TOPIC, p).leader
               for p in range(PARTITIONS)}
    victim = cluster.broker(leaders[0])
    disk = FillingDisk(room=0)
    victim.log_manager.pwrite = disk
    producer = Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                        request_timeout_ms=10_000)
    try:
        for partition in range(PARTITIONS):
            producer.send(TOPIC, b"after the disk filled", partition=partition).get(60)
    finally:
        producer.close()
    assert disk.refused, "the failed disk was never written"
    assert victim.log_manager.offline_dirs
    for partition in range(PARTITIONS):
        state = cluster.partition_state(TOPIC, partition)
        assert state.leader != victim.node_id and victim.node_id not in state.isr, state
        assert victim.node_id in state.offline_replicas
    for broker in cluster.brokers:
        seen = _until(lambda b=broker: (found := _metadata(wire, b.address("PLAINTEXT")))
                      and all(victim.node_id in p["offline_replicas"] for p in found.values())
                      and found, f"broker {broker.node_id} to list the offline replicas")
        for partition, answer in seen.items():
            assert answer["error_code"] == 0, (broker.node_id, answer)
            assert answer["leader_id"] == cluster.partition_state(TOPIC, partition).leader
