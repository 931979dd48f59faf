"""The controller over the in-memory backend on a fake clock: failover state, leader
election on broker loss with epoch bumps, and a stale controller fenced by its epoch."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalite.protocol.errors import StaleBrokerEpochError
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.active_controller import Controller, FencedError
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.memory_store import MemoryEnsemble
from kafkalite_server.cluster.messages import LeaderAndIsr, StopReplica, UpdateMetadata
from kafkalite_server.topic_ids import legacy_topic_id, new_topic_id


class Recording:
    def __init__(self) -> None:
        self.sent: list[object] = []
        self.answers: list[object] = []
        self.closed = False

    def send(self, message: object, on_answer: object = None) -> None:
        assert not self.closed, f"{message} sent on a closed channel"
        self.sent.append(message)
        self.answers.append(on_answer)

    async def drained(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class Cluster:
    """Brokers as registrations with their own sessions, and a controller whose watch
    callbacks queue up until :meth:`settle` runs them (the fake event loop)."""

    def __init__(self, broker_ids: list[int]) -> None:
        self.now = 0
        self.ensemble = MemoryEnsemble(lambda: self.now)
        self.admin = self.ensemble.connect()
        for path in layout.PERSISTENT_PATHS:
            self.admin.ensure_path(path)
        self.admin.create(layout.CONTROLLER_EPOCH, layout.encode_epoch(0))
        self.admin.create(layout.CLUSTER_ID, layout.encode_cluster_id("unit-cluster"))
        self.sessions = {}
        for broker_id in broker_ids:
            session = self.ensemble.connect(6000)
            session.create(layout.broker_path(broker_id), layout.encode_broker(
                BrokerEndpoint(broker_id, "127.0.0.1", 9000 + broker_id), 0), ephemeral=True)
            self.sessions[broker_id] = session
        self.channels: dict[int, Recording] = {}
        self.queue: list[Callable[[], None]] = []

    def elect(self, broker_id: int, **options: object) -> Controller:
        data, stat = self.admin.get(layout.CONTROLLER_EPOCH)
        self.admin.set(layout.CONTROLLER_EPOCH, layout.encode_epoch(layout.decode_epoch(data) + 1),
                       stat.version)

        def channel(endpoint: BrokerEndpoint) -> Recording:
            self.channels[endpoint.node_id] = Recording()
            return self.channels[endpoint.node_id]
        controller = Controller(
            self.ensemble.connect(), broker_id, layout.decode_epoch(data) + 1, stat.version + 1,
            unclean_election=bool(options.get("unclean", False)), imbalance_percentage=10,
            open_channel=channel, on_change=self.queue.append)
        controller.start()
        return controller

    def settle(self) -> None:
        while self.queue:
            self.queue.pop(0)()

    def state(self, topic: str, index: int) -> layout.LeaderIsr:
        path = layout.partition_state_path(topic, index)
        return layout.LeaderIsr.decode(path, self.admin.get(path)[0])


def test_a_new_topic_gets_state_nodes_and_its_replicas_hear_of_it():
    cluster = Cluster([1, 2, 3])
    controller = cluster.elect(1)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [2, 3, 1]}))
    cluster.settle()
    assert cluster.state("t", 0) == layout.LeaderIsr(2, 0, (2, 3, 1), controller.epoch)
    told = [m for m in cluster.channels[3].sent if isinstance(m, LeaderAndIsr)]
    assert told[-1].partitions[0].leader == 2 and told[-1].controller_epoch == 1
    assert all(isinstance(m, UpdateMetadata) for m in cluster.channels[1].sent[-1:])


def test_losing_the_leader_elects_the_next_isr_replica_with_a_bumped_epoch():
    cluster = Cluster([1, 2, 3])
    cluster.elect(1)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [2, 3, 1]}))
    cluster.settle()
    cluster.sessions[2].pause()
    cluster.now += 6001
    assert cluster.ensemble.tick() == [cluster.sessions[2].session_id]
    cluster.settle()
    state = cluster.state("t", 0)
    assert (state.leader, state.leader_epoch, state.isr) == (3, 1, (3, 1))


@pytest.mark.parametrize(("unclean", "leader"), [(False, -1), (True, 1)])
def test_with_no_live_isr_member_only_unclean_election_picks_a_leader(unclean, leader):
    cluster = Cluster([1, 2])
    cluster.elect(1, unclean=unclean)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [2, 1]}))
    cluster.settle()
    # Only 2 is in sync (the ISR shrank behind the controller's back: its cached version
    # is stale, so its next write conflicts and it retries from a fresh read).
    path = layout.partition_state_path("t", 0)
    cluster.admin.set(path, layout.LeaderIsr(2, 0, (2,), 1).encode())
    cluster.ensemble.expire(cluster.sessions[2].session_id)
    cluster.settle()
    assert cluster.state("t", 0).leader == leader


def test_a_controller_with_an_older_epoch_cannot_write():
    cluster = Cluster([1, 2, 3])
    stale = cluster.elect(1)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [1, 2]}))
    cluster.settle()
    cluster.elect(2)  # a newer controller while the first one was paused
    with pytest.raises(FencedError):
        stale.controlled_shutdown(1)
    assert cluster.state("t", 0).leader == 1


def test_controlled_shutdown_moves_leadership_first():
    cluster = Cluster([1, 2, 3])
    controller = cluster.elect(3)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment(
        {0: [1, 2], 1: [1], 2: [1, 4]}))
    cluster.settle()
    remaining = controller.controlled_shutdown(1)
    # Partition 2's other replica is not live, so broker 1 still leads it; partition 1 has
    # no other replica at all, and is not counted (as in Kafka): it has nowhere to go.
    assert remaining == [("t", 2)]
    state = cluster.state("t", 0)
    assert (state.leader, state.leader_epoch, state.isr) == (2, 1, (2,))
    # The stopping broker is told to stop the replicas it no longer leads (not partition
    # 1, which it still leads): a fetcher running until it exits would rejoin the ISR.
    stops = [m for m in cluster.channels[1].sent if isinstance(m, StopReplica)]
    assert [(m.partitions, m.delete) for m in stops] == [((("t", 0),), False)]
    assert cluster.channels[1].sent[-1] == stops[-1]  # after its LeaderAndIsr


def test_a_broker_that_restarts_between_two_reads_is_handled_as_gone_then_back():
    """Its old registration's deletion and its new one's creation both happen before the
    controller reads /brokers/ids, so the id set looks unchanged; the new registration's
    creation id (the broker epoch) shows the restart. The old incarnation's leadership
    moves on with a bumped epoch, and the new incarnation gets its LeaderAndIsr (without
    it, it would never fetch and never rejoin the ISR)."""
    cluster = Cluster([1, 2, 3])
    cluster.elect(1)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [2, 3, 1]}))
    cluster.settle()
    old_channel = cluster.channels[2]
    cluster.sessions[2].close()
    restarted = cluster.ensemble.connect(6000)
    restarted.create(layout.broker_path(2), layout.encode_broker(
        BrokerEndpoint(2, "127.0.0.1", 9002), 0), ephemeral=True)
    cluster.settle()
    state = cluster.state("t", 0)
    assert (state.leader, state.leader_epoch, state.isr) == (3, 1, (3, 1))
    new_channel = cluster.channels[2]
    assert new_channel is not old_channel
    told = [m for m in new_channel.sent if isinstance(m, LeaderAndIsr)]
    assert told and told[-1].partitions[0].leader == 3


def test_a_bounced_broker_that_was_the_only_replica_leads_again():
    cluster = Cluster([1, 2])
    cluster.elect(1)
    cluster.admin.create(layout.topic_path("solo"), layout.encode_assignment({0: [2]}))
    cluster.settle()
    cluster.sessions[2].close()
    cluster.ensemble.connect(6000).create(layout.broker_path(2), layout.encode_broker(
        BrokerEndpoint(2, "127.0.0.1", 9002), 0), ephemeral=True)
    cluster.settle()
    state = cluster.state("solo", 0)
    assert (state.leader, state.isr) == (2, (2,)) and state.leader_epoch >= 1
    told = [m for m in cluster.channels[2].sent if isinstance(m, LeaderAndIsr)]
    assert told[-1].partitions[0].leader == 2
    assert told[-1].partitions[0].leader_epoch == state.leader_epoch


def test_messages_name_the_incarnation_they_are_for():
    """KIP-380: each message carries its target's broker epoch (the czxid of its
    registration); when the broker restarts, the channel to the old incarnation is closed
    and the new one's messages carry the new epoch. A ControlledShutdown from the old
    incarnation is refused."""
    cluster = Cluster([1, 2, 3])
    controller = cluster.elect(1)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [2, 3, 1]}))
    cluster.settle()
    first_epoch = cluster.sessions[2].exists(layout.broker_path(2)).creation_id
    old_channel = cluster.channels[2]
    assert old_channel.sent
    assert {m.broker_epoch for m in old_channel.sent} == {first_epoch}
    cluster.sessions[2].close()
    restarted = cluster.ensemble.connect(6000)
    restarted.create(layout.broker_path(2), layout.encode_broker(
        BrokerEndpoint(2, "127.0.0.1", 9002), 0), ephemeral=True)
    cluster.settle()
    second_epoch = restarted.exists(layout.broker_path(2)).creation_id
    assert second_epoch > first_epoch
    assert old_channel.closed
    new_channel = cluster.channels[2]
    assert new_channel.sent
    assert {m.broker_epoch for m in new_channel.sent} == {second_epoch}
    with pytest.raises(StaleBrokerEpochError):
        controller.controlled_shutdown(2, first_epoch)
    assert 2 not in controller.shutting_down
    assert controller.controlled_shutdown(2, second_epoch) == []
    assert 2 in controller.shutting_down


def test_a_failed_log_dir_moves_leadership_and_lists_the_replicas_offline():
    """Kafka's LogDirEventNotification: the controller asks the broker (a LeaderAndIsr of
    every replica it holds) and takes the replicas it answers KAFKA_STORAGE_ERROR for
    offline: another ISR member leads, the broker leaves the ISRs, and UpdateMetadata
    lists it in offline_replicas. Its other replicas are untouched."""
    cluster = Cluster([1, 2, 3])
    cluster.elect(1)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [2, 3, 1], 1: [3, 2, 1],
                                                                   2: [1, 3]}))
    cluster.settle()
    cluster.admin.create(layout.LOG_DIR_EVENT_PREFIX, layout.encode_log_dir_event(2), sequential=True,
                         makepath=True)
    cluster.settle()
    assert cluster.admin.children(layout.LOG_DIR_EVENT_NOTIFICATION) == []
    channel = cluster.channels[2]
    asked, on_answer = channel.sent[-1], channel.answers[-1]
    assert isinstance(asked, LeaderAndIsr) and callable(on_answer)
    assert {s.key for s in asked.partitions} == {("t", 0), ("t", 1)}
    on_answer({("t", 0): 56, ("t", 1): 56})
    cluster.settle()
    assert (cluster.state("t", 0).leader, cluster.state("t", 0).isr) == (3, (3, 1))
    assert cluster.state("t", 0).leader_epoch == 1
    assert cluster.state("t", 1).isr == (3, 1) and cluster.state("t", 1).leader == 3
    assert cluster.state("t", 2).isr == (1, 3)
    told = [m for m in cluster.channels[3].sent if isinstance(m, UpdateMetadata)][-1]
    assert {s.key: s.offline_replicas for s in told.partitions} == {("t", 0): (2,),
                                                                    ("t", 1): (2,)}


def _stored_id(cluster: Cluster, topic: str) -> object:
    return layout.decode_topic_id(topic, cluster.admin.get(layout.topic_path(topic))[0])


def test_a_topics_id_goes_to_every_broker_and_survives_a_new_controller():
    cluster = Cluster([1, 2, 3])
    controller = cluster.elect(1)
    topic_id = new_topic_id()
    cluster.admin.create(layout.topic_path("t"),
                         layout.encode_assignment({0: [2, 3, 1]}, topic_id=topic_id))
    cluster.settle()
    assert controller.topic_ids == {"t": topic_id}
    told = [m for m in cluster.channels[3].sent if isinstance(m, LeaderAndIsr)][-1]
    updated = [m for m in cluster.channels[1].sent if isinstance(m, UpdateMetadata)][-1]
    assert told.partitions[0].topic_id == updated.partitions[0].topic_id == topic_id
    controller.stop()
    successor = cluster.elect(2)
    assert successor.topic_ids == {"t": topic_id} and _stored_id(cluster, "t") == topic_id


def test_a_topic_from_before_ids_gets_its_former_id_once_and_keeps_it():
    cluster = Cluster([1, 2])
    cluster.admin.create(layout.topic_path("old"), layout.encode_assignment({0: [1, 2]}))
    controller = cluster.elect(1)
    cluster.settle()
    assigned = legacy_topic_id("unit-cluster", "old")
    assert controller.topic_ids == {"old": assigned} and _stored_id(cluster, "old") == assigned
    version = cluster.admin.get(layout.topic_path("old"))[1].version
    controller.stop()
    assert cluster.elect(2).topic_ids == {"old": assigned}
    assert cluster.admin.get(layout.topic_path("old"))[1].version == version  # written once


def test_a_deleted_topics_brokers_hear_its_id_and_a_recreated_one_has_another():
    cluster = Cluster([1, 2])
    controller = cluster.elect(1)
    first, second = new_topic_id(), new_topic_id()
    cluster.admin.create(layout.topic_path("t"),
                         layout.encode_assignment({0: [1, 2]}, topic_id=first))
    cluster.settle()
    cluster.admin.create(layout.delete_topic_path("t"))
    cluster.settle()
    deleted = [m for m in cluster.channels[2].sent if isinstance(m, UpdateMetadata)][-1]
    assert [(s.leader, s.topic_id) for s in deleted.partitions] == [(-2, first)]
    cluster.admin.create(layout.topic_path("t"),
                         layout.encode_assignment({0: [2, 1]}, topic_id=second))
    cluster.settle()
    assert controller.topic_ids == {"t": second}
    told = [m for m in cluster.channels[2].sent if isinstance(m, LeaderAndIsr)][-1]
    assert told.partitions[0].topic_id == second
