"""SyncGroup is answered once the group's assignment is in the ISR of its offsets partition,
as Kafka's coordinator stores it with ``offsets.commit.required.acks=-1``: an assignment
the coordinator's followers never got is not one a member may act on (a new coordinator
would not know it), and a write the ISR cannot take is answered COORDINATOR_NOT_AVAILABLE."""

from __future__ import annotations

from replication_helpers import replica, until

from kafkalite.protocol import ApiKey

GROUP = "assigned"
OFFSETS = "__consumer_offsets"


def test_sync_group_waits_for_the_isr_and_answers_its_failure(memory_cluster, wire):
    cluster = memory_cluster(2, **{"offsets.topic.num.partitions": "1",
                                   "offsets.topic.replication.factor": "2",
                                   "min.insync.replicas": "2",
                                   "replica.lag.time.max.ms": "1000",
                                   "group.initial.rebalance.delay.ms": "0"})
    coordinator = wire(cluster.bootstrap_servers).find_coordinator(GROUP)
    assert coordinator["error_code"] == 0
    leader_id = coordinator["node_id"]
    until(lambda: len(replica(cluster, leader_id, OFFSETS).isr) == 2, "both replicas in sync")
    for broker in cluster.brokers:  # the follower stops fetching, still in the ISR for now
        if broker.node_id != leader_id:
            cluster.call(broker.replica_manager.shutdown())
    client = wire(f"{coordinator['host']}:{coordinator['port']}")
    joined = client.call(ApiKey.JOIN_GROUP, 3, {
        "group_id": GROUP, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000,
        "member_id": "", "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})
    assert joined["error_code"] == 0
    synced = client.call(ApiKey.SYNC_GROUP, 3, {
        "group_id": GROUP, "generation_id": joined["generation_id"],
        "member_id": joined["member_id"], "group_instance_id": None,
        "assignments": [{"member_id": joined["member_id"], "assignment": b"\x00\x01"}]})
    offsets = replica(cluster, leader_id, OFFSETS)
    # The follower left the ISR while the answer waited; one replica is below
    # min.insync.replicas, so the stored assignment is refused as Kafka refuses it.
    assert offsets.isr == (leader_id,)
    assert synced["error_code"] == 15  # COORDINATOR_NOT_AVAILABLE
    assert synced["assignment"] == b""
