"""Controller requests are fenced by epochs (KIP-380 and the controller epoch in the
coordination store): a request stamped for an earlier incarnation of a broker is refused
with STALE_BROKER_EPOCH and changes nothing, and an epoch no controller was ever elected
with (2^31-1) is refused by every broker, so it cannot fence the real controller."""

from __future__ import annotations

import functools

from polling import until

from kafkalite.admin import AdminClient, NewTopic
from kafkalite.protocol import ApiKey
from kafkalite_server.cluster import metadata_layout as layout

_until = functools.partial(until, timeout=20, interval=0.02)


def test_a_stop_replica_for_an_earlier_incarnation_changes_nothing(cluster_factory, wire):
    cluster = cluster_factory(3)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("kept", 1, 3)], wait_for_metadata=True)
    follower = next(b for b in cluster.brokers
                    if b.node_id != b.metadata_cache.partition("kept", 0).leader)
    assert cluster.ensemble is not None
    store = cluster.ensemble.connect()
    stat = store.exists(layout.broker_path(follower.node_id))
    store.close()
    assert stat is not None
    epoch = stat.creation_id  # the czxid of its registration
    stop = {"controller_id": cluster.controller_id,
            "controller_epoch": follower.replica_manager.controller_epoch,
            "broker_epoch": epoch - 1, "delete_partitions": True,
            "topics": [{"name": "kept", "partition_indexes": [0]}]}
    client = wire(follower.address("PLAINTEXT"))
    assert client.call(ApiKey.STOP_REPLICA, 1, stop)["error_code"] == 77
    assert ("kept", 0) in follower.replica_manager.partitions
    assert (follower.log_manager.log_dirs[0] / "kept-0").is_dir()


def test_an_absurd_controller_epoch_cannot_fence_the_controller(cluster_factory, wire):
    cluster = cluster_factory(3)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("moved", 1, 3)], wait_for_metadata=True)
    absurd = {"controller_id": 99, "controller_epoch": 2**31 - 1,
              "ungrouped_partition_states": [], "live_brokers": []}
    for broker in cluster.brokers:
        answer = wire(broker.address("PLAINTEXT")).call(ApiKey.UPDATE_METADATA, 4, absurd)
        assert answer["error_code"] == 11, broker.node_id
    # The real controller still reaches every broker: a leader that stops is replaced,
    # and the survivors hear of it.
    leader = cluster.brokers[0].metadata_cache.partition("moved", 0).leader
    cluster.stop_broker(leader)
    for broker in cluster.brokers:
        _until(lambda b=broker: b.metadata_cache.partition("moved", 0).leader
               not in (-1, leader), f"broker {broker.node_id} to hear of the new leader")
