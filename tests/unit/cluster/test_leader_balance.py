"""Preferred leader elections by the controller over the in-memory backend on a fake clock:
a broker whose session expired comes back, catches up (its leader grows the ISR), and
leadership returns to it on request (ElectLeaders) or by the auto.leader.rebalance check
once its share of misplaced leaders passes leader.imbalance.per.broker.percentage."""

from __future__ import annotations

from test_active_controller import Cluster

from kafkalite.protocol.errors import ElectionNotNeededError, PreferredLeaderNotAvailableError
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.election_requests import ElectionType
from kafkalite_server.cluster.messages import LeaderAndIsr


def _outage(cluster: Cluster, broker_id: int) -> None:
    """The broker pauses past its session timeout, then registers again."""
    cluster.sessions[broker_id].pause()
    cluster.now += 6001
    assert cluster.ensemble.tick() == [cluster.sessions[broker_id].session_id]
    cluster.settle()
    session = cluster.ensemble.connect(6000)
    session.create(layout.broker_path(broker_id), layout.encode_broker(
        BrokerEndpoint(broker_id, "127.0.0.1", 9000 + broker_id), cluster.now), ephemeral=True)
    cluster.sessions[broker_id] = session
    cluster.settle()


def _caught_up(cluster: Cluster, topic: str, index: int, broker_id: int) -> None:
    """What the partition's leader writes when the replica rejoins the ISR."""
    path = layout.partition_state_path(topic, index)
    data, stat = cluster.admin.get(path)
    state = layout.LeaderIsr.decode(path, data)
    cluster.admin.set(path, layout.LeaderIsr(state.leader, state.leader_epoch,
                                         (*state.isr, broker_id), state.controller_epoch).encode(),
                      stat.version)


def test_an_election_request_moves_leadership_back_once_the_replica_is_in_sync():
    cluster = Cluster([1, 2, 3])
    controller = cluster.elect(3)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [1, 2, 3], 1: [2, 1, 3]}))
    cluster.settle()
    _outage(cluster, 1)
    assert cluster.state("t", 0).leader == 2
    lagging = controller.elect_on_request(ElectionType.PREFERRED, [("t", 0), ("t", 1)])
    assert isinstance(lagging["t", 0], PreferredLeaderNotAvailableError)
    assert isinstance(lagging["t", 1], ElectionNotNeededError)
    _caught_up(cluster, "t", 0, 1)
    epoch = cluster.state("t", 0).leader_epoch
    outcome = controller.elect_on_request(ElectionType.PREFERRED, None)
    assert outcome["t", 0] == 1 and isinstance(outcome["t", 1], ElectionNotNeededError)
    state = cluster.state("t", 0)
    assert (state.leader, state.leader_epoch) == (1, epoch + 1)
    told = [m for m in cluster.channels[1].sent if isinstance(m, LeaderAndIsr)]
    assert told[-1].partitions[0].leader == 1


def test_rebalance_moves_only_brokers_over_the_imbalance_percentage():
    cluster = Cluster([1, 2, 3])
    controller = cluster.elect(3)
    # Eleven partitions prefer broker 1 (and broker 2 after it).
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment(
        {index: [1, 2, 3] for index in range(11)}))
    cluster.settle()
    _outage(cluster, 1)
    assert {cluster.state("t", i).leader for i in range(11)} == {2}
    _caught_up(cluster, "t", 0, 1)
    # Every partition is off its preferred leader, but only partition 0 can go back.
    assert controller.rebalance_leaders() == [("t", 0)]
    # Now 10 of 11 are off: still over 10 %, each one moves once in sync.
    for index in range(1, 10):
        _caught_up(cluster, "t", index, 1)
    moved = controller.rebalance_leaders()
    assert moved == [("t", i) for i in range(1, 10)]
    # 1 of 11 (9 %) off its preferred leader is under the threshold: left alone.
    _caught_up(cluster, "t", 10, 1)
    assert controller.rebalance_leaders() == []
    assert cluster.state("t", 10).leader == 2
