"""Partition reassignment (KIP-455) in the controller, over the in-memory store: the two
phases (new replicas added, then the old ones removed once the new are in sync), leadership
moved off a leaving leader, a new controller resuming a move from the assignment node, a
cancel, Kafka's errors for bad targets; and the pure arithmetic of a move."""

from __future__ import annotations

import json
import re

import pytest
from test_active_controller import Cluster

from kafkalite.protocol.errors import (
    InvalidReplicaAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.active_controller import Controller
from kafkalite_server.cluster.messages import LeaderAndIsr, StopReplica
from kafkalite_server.cluster.reassignment import Reassignment, checked_target
from kafkalite_server.topic_ids import uuid_text

KEY = ("t", 0)


def _cluster() -> tuple[Cluster, object]:
    cluster = Cluster([1, 2, 3, 4])
    controller = cluster.elect(1)
    cluster.admin.create(layout.topic_path("t"), layout.encode_assignment({0: [1, 2]}))
    cluster.settle()
    return cluster, controller


def _stored(cluster: Cluster) -> dict[str, object]:
    return json.loads(cluster.admin.get(layout.topic_path("t"))[0])


def _settled(controller: Controller, partitions: dict[str, list[int]]) -> dict[str, object]:
    """The assignment node once no move is under way: Kafka 2.8+'s version 3, which keeps
    the topic's id through every rewrite."""
    return {"version": 3, "topic_id": uuid_text(controller.topic_ids["t"]),
            "partitions": partitions, "adding_replicas": {}, "removing_replicas": {}}


def _in_sync(cluster: Cluster, isr: tuple[int, ...]) -> None:
    """What the leader does when a new replica caught up: the ISR in the state node, then
    an ISR change notification for the controller."""
    path = layout.partition_state_path(*KEY)
    state = cluster.state(*KEY)
    cluster.admin.set(path, layout.LeaderIsr(state.leader, state.leader_epoch, isr,
                                             state.controller_epoch).encode())
    cluster.admin.create(layout.ISR_CHANGE_PREFIX, layout.encode_isr_change([KEY]),
                         sequential=True)
    cluster.settle()


def _stops(cluster: Cluster, broker_id: int) -> list[StopReplica]:
    return [m for m in cluster.channels[broker_id].sent if isinstance(m, StopReplica)]


def test_a_move_adds_the_new_replicas_then_removes_the_old_ones_once_they_are_in_sync():
    cluster, controller = _cluster()
    epoch = cluster.state(*KEY).leader_epoch
    assert controller.alter_reassignments({KEY: [3, 2]}) == {KEY: None}
    cluster.settle()
    stored = _stored(cluster)
    assert stored["partitions"] == {"0": [3, 2, 1]}
    assert (stored["adding_replicas"], stored["removing_replicas"]) == ({"0": [3]}, {"0": [1]})
    assert cluster.state(*KEY).leader_epoch == epoch + 1
    told = [m for m in cluster.channels[3].sent if isinstance(m, LeaderAndIsr)][-1]
    assert told.partitions[0].replicas == (3, 2, 1)
    assert controller.list_reassignments(None) == {KEY: Reassignment((1, 2), (3, 2))}

    _in_sync(cluster, (1, 2, 3))
    assert _stored(cluster) == _settled(controller, {"0": [3, 2]})
    state = cluster.state(*KEY)
    # The leaving leader hands over to the first target replica in sync, as in Kafka.
    assert (state.leader, state.isr) == (3, (2, 3))
    assert [s.partitions for s in _stops(cluster, 1)] == [(KEY,)]
    assert _stops(cluster, 1)[0].delete
    assert controller.list_reassignments(None) == {}


def test_a_new_controller_resumes_a_move_from_the_assignment_node():
    cluster, first = _cluster()
    first.alter_reassignments({KEY: [3, 4]})
    cluster.settle()
    first.stop()
    second = cluster.elect(2)
    assert second.list_reassignments([KEY]) == {KEY: Reassignment((1, 2), (3, 4))}
    _in_sync(cluster, (1, 2, 3, 4))
    assert _stored(cluster)["partitions"] == {"0": [3, 4]}
    assert cluster.state(*KEY).leader == 3
    assert {b for b in (1, 2) if _stops(cluster, b)} == {1, 2}


def test_a_cancel_goes_back_to_the_original_replicas_and_deletes_the_added_ones():
    cluster, controller = _cluster()
    controller.alter_reassignments({KEY: [3, 4]})
    cluster.settle()
    assert controller.alter_reassignments({KEY: None}) == {KEY: None}
    cluster.settle()
    assert _stored(cluster) == _settled(controller, {"0": [1, 2]})
    assert cluster.state(*KEY).leader == 1
    assert _stops(cluster, 3)[-1].delete and _stops(cluster, 4)[-1].delete
    assert controller.list_reassignments(None) == {}


def test_a_new_target_replaces_the_move_under_way():
    cluster, controller = _cluster()
    controller.alter_reassignments({KEY: [3, 2]})
    cluster.settle()
    controller.alter_reassignments({KEY: [4, 2]})
    cluster.settle()
    assert controller.list_reassignments(None) == {KEY: Reassignment((1, 2), (4, 2))}
    assert _stops(cluster, 3)[-1].delete  # 3 was being added, and no longer is


def test_bad_targets_get_kafkas_errors_and_change_nothing():
    cluster, controller = _cluster()
    results = controller.alter_reassignments({KEY: [1, 9], ("t", 5): [1, 2],
                                              ("u", 0): [1, 2]})
    assert isinstance(results[KEY], InvalidReplicaAssignmentError)
    assert "not alive: [9]" in str(results[KEY])
    assert isinstance(results[("t", 5)], UnknownTopicOrPartitionError)
    assert isinstance(results[("u", 0)], UnknownTopicOrPartitionError)
    assert isinstance(controller.alter_reassignments({KEY: None})[KEY],
                      NoReassignmentInProgressError)
    assert _stored(cluster) == _settled(controller, {"0": [1, 2]})


@pytest.mark.parametrize(("replicas", "reason"), [
    ([], "empty replica list"), ([1, 1], "duplicate replica ids"),
    ([1, 7], "not alive: [7]")])
def test_checked_target_names_the_problem(replicas, reason):
    with pytest.raises(InvalidReplicaAssignmentError, match=re.escape(reason)):
        checked_target("t-0", replicas, {1, 2})


def test_a_move_is_stored_and_read_back_as_kafka_lays_it_out():
    move = Reassignment((1, 2, 3), (4, 2, 5))
    assert (move.replicas, move.adding, move.removing) == ([4, 2, 5, 1, 3], [4, 5], [1, 3])
    data = layout.encode_assignment({0: move.replicas, 1: [1, 2]}, {0: move.adding},
                                    {0: move.removing})
    adding, removing = layout.decode_reassigning("t", data)
    # As in Kafka, the original replicas come back in the stored set's order.
    assert Reassignment.stored(layout.decode_assignment("t", data)[0], adding[0],
                               removing[0]) == Reassignment((2, 1, 3), (4, 2, 5))
    assert layout.decode_reassigning("t", layout.encode_assignment({0: [1]})) == ({}, {})
    assert not move.complete((4, 2, 1, 3)) and move.complete((1, 2, 3, 4, 5))
