"""AdminUtils placement, the election rules, and the controller role table."""

from __future__ import annotations

from collections import Counter

import pytest

from kafkalite.protocol.errors import InvalidReplicationFactorError, InvalidRequestError
from kafkalite_server.cluster.controller_state import (
    IGNORED,
    IMPOSSIBLE,
    TRANSITIONS,
    Action,
    ControllerRole,
    Event,
    Role,
)
from kafkalite_server.cluster.election import (
    controlled_shutdown_leader,
    imbalanced,
    offline_partition_leader,
    preferred_replica_leader,
)
from kafkalite_server.cluster.placement import assign_replicas, rack_alternated


def test_without_racks_followers_shift_each_time_the_partitions_wrap():
    """Kafka's AdminUtilsTest.testReplicaAssignment, fixed start index 0."""
    brokers = dict.fromkeys(range(5))
    assert assign_replicas(brokers, 10, 3, start=0, shift=0) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_racks_are_interleaved_and_every_partition_spans_the_racks():
    racks = {0: "r1", 1: "r1", 2: "r1", 3: "r2", 4: "r2", 5: "r2", 6: "r3", 7: "r3", 8: "r3"}
    assert rack_alternated(racks) == [0, 3, 6, 1, 4, 7, 2, 5, 8]
    assignment = assign_replicas(racks, 18, 3)
    for replicas in assignment.values():
        assert len(set(replicas)) == 3 and {racks[b] for b in replicas} == {"r1", "r2", "r3"}
    assert set(Counter(r[0] for r in assignment.values()).values()) == {2}  # even leaders


def test_placement_refuses_what_cannot_be_placed():
    with pytest.raises(InvalidReplicationFactorError, match="larger than the 2 available"):
        assign_replicas({0: None, 1: None}, 1, 3)
    with pytest.raises(InvalidRequestError, match=r"broker\.rack"):
        assign_replicas({0: "r1", 1: None}, 1, 1)


def test_offline_election_takes_the_first_live_isr_replica_in_assignment_order():
    assert offline_partition_leader([1, 2, 3], [3, 2], {2, 3}, unclean=False).leader == 2
    assert offline_partition_leader([1, 2, 3], [1], {2, 3}, unclean=False) is None
    unclean = offline_partition_leader([1, 2, 3], [1], {2, 3}, unclean=True)
    assert (unclean.leader, unclean.isr, unclean.unclean) == (2, (2,), True)


def test_preferred_and_controlled_shutdown_elections():
    assert preferred_replica_leader([1, 2], [2, 1], {1, 2}).leader == 1
    assert preferred_replica_leader([1, 2], [2], {1, 2}) is None
    moved = controlled_shutdown_leader([1, 2, 3], [1, 2, 3], {1, 2, 3}, shutting_down=1)
    assert (moved.leader, moved.isr) == (2, (2, 3))
    leaders = {("t", 0): 2, ("t", 1): 2, ("t", 2): 3}
    preferred = {("t", 0): 1, ("t", 1): 2, ("t", 2): 1}
    assert imbalanced(leaders, preferred, 10) == [("t", 0), ("t", 2)]


def test_the_role_table_covers_every_pair_exactly_once():
    for role in Role:
        for event in Event:
            kinds = [(role, event) in table for table in (TRANSITIONS, IGNORED, IMPOSSIBLE)]
            assert kinds.count(True) == 1, (role, event)
    role = ControllerRole()
    role.on(Event.REGISTERED)
    with pytest.raises(ValueError, match="no transition"):
        role.on(Event.REGISTERED)


def test_a_controller_that_loses_its_session_stops_and_registers_again():
    role = ControllerRole()
    assert role.on(Event.REGISTERED) == (Action.RUN_FOR_CONTROLLER,)
    assert role.on(Event.ELECTION_WON) == (Action.START_CONTROLLING,)
    assert role.on(Event.SESSION_LOST) == (Action.STOP_CONTROLLING, Action.RECONNECT)
    assert role.role is Role.STARTING
    assert role.on(Event.ELECTION_WON) == ()  # a late answer from the old session
