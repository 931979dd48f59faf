"""ElectLeaders (43) on an in-process cluster over the in-memory coordination backend: the
same controller and broker code as a ZooKeeper cluster, driven through AdminClient and the
wire protocol."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest
from polling import until
from seeding import seed_topic

from kafkalite.admin import AdminClient, ElectionType, NewTopic
from kafkalite.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    PreferredLeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)
from kafkalite.protocol import ApiKey
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster

WAIT_S = 20


_until = functools.partial(until, timeout=WAIT_S, interval=0.02)


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=3, config={
            "controlled.shutdown.retry.backoff.ms": "50",
            "controlled.shutdown.max.retries": "1"}) as started:
        yield started


def _state(cluster: EmbeddedCluster, via: int, topic: str, index: int) -> Any:
    return cluster.broker(via).metadata_cache.partition(topic, index)


def _seed(cluster: EmbeddedCluster, topic: str, partitions: dict[int, Any]) -> None:
    assert cluster.ensemble is not None
    store = cluster.ensemble.connect()
    try:
        seed_topic(store, topic, partitions)
    finally:
        store.close()
    _until(lambda: all(_state(cluster, b.node_id, topic, i) is not None
                       for b in cluster.brokers for i in partitions), "the seeded topic")


def test_preferred_election_moves_leadership_back_and_bumps_the_epoch(cluster):
    _seed(cluster, "back", {0: ([0, 1, 2], 1, [0, 1, 2]), 1: ([1, 2, 0], 1, [1, 2, 0])})
    before = _state(cluster, 2, "back", 0)
    with AdminClient(cluster.bootstrap_servers) as admin:
        outcome = admin.elect_leaders(ElectionType.PREFERRED, {"back": [0, 1]})
        assert outcome[TopicPartition("back", 0)] is None
        assert isinstance(outcome[TopicPartition("back", 1)], ElectionNotNeededError)
        # Answered once the broker's own metadata shows the new leader.
        after = _state(cluster, cluster.controller_id, "back", 0)
        assert (after.leader, after.leader_epoch) == (0, before.leader_epoch + 1)
        leader = cluster.broker(0).replica_manager.leader_partition("back", 0)
        assert leader is not None
        # The same request again: nothing to do.
        again = admin.elect_leaders(ElectionType.PREFERRED, {"back": [0]})
        assert isinstance(again[TopicPartition("back", 0)], ElectionNotNeededError)


def test_a_preferred_replica_that_is_down_is_not_available(cluster):
    _seed(cluster, "lagging", {0: ([0, 1], 1, [1])})
    cluster.stop_broker(0)
    with AdminClient(cluster.bootstrap_servers) as admin:
        with pytest.raises(PreferredLeaderNotAvailableError, match="not alive"):
            admin.elect_leaders(ElectionType.PREFERRED, ["lagging"])
        outcome = admin.elect_leaders(0, [TopicPartition("lagging", 0),
                                          TopicPartition("nope", 0)], raise_errors=False)
    assert isinstance(outcome[TopicPartition("nope", 0)], UnknownTopicOrPartitionError)
    assert _state(cluster, 1, "lagging", 0).leader == 1


def test_unclean_election_takes_a_live_replica_outside_the_isr(cluster):
    cluster.stop_broker(2)  # down while broker 1 alone is in sync
    _seed(cluster, "offline", {0: ([1, 2], 1, [1])})
    cluster.stop_broker(1)  # the only ISR member: the partition goes offline
    cluster.restart_broker(2)
    controller = cluster.controller_id
    _until(lambda: _state(cluster, controller, "offline", 0).leader == -1, "offline")
    with AdminClient(cluster.bootstrap_servers) as admin:
        preferred = admin.elect_leaders(ElectionType.PREFERRED, None, raise_errors=False)
        assert isinstance(preferred[TopicPartition("offline", 0)],
                          PreferredLeaderNotAvailableError)
        outcome = admin.elect_leaders(ElectionType.UNCLEAN, {"offline": [0]})
    assert outcome == {TopicPartition("offline", 0): None}
    state = _state(cluster, controller, "offline", 0)
    assert (state.leader, state.isr) == (2, (2,))


def test_unclean_election_without_any_live_replica_names_the_replicas(cluster):
    _seed(cluster, "gone", {0: ([1], 1, [1])})
    cluster.stop_broker(1)
    with (AdminClient(cluster.bootstrap_servers) as admin,
          pytest.raises(EligibleLeadersNotAvailableError, match=r"replicas \[1\]")):
        admin.elect_leaders(ElectionType.UNCLEAN, ["gone"])


def test_a_broker_that_is_not_the_controller_says_so(cluster, wire):
    other = next(b for b in cluster.brokers if b.node_id != cluster.controller_id)
    client = wire(f"127.0.0.1:{other.port}")
    body = {"election_type": 0, "topic_partitions": [{"topic": "t", "partitions": [0]}],
            "timeout_ms": 1000}
    answer = client.call(ApiKey.ELECT_LEADERS, 2, body)
    assert answer["error_code"] == 41
    assert answer["replica_election_results"][0]["partition_result"][0]["error_code"] == 41
    bad = client.call(ApiKey.ELECT_LEADERS, 1, {**body, "election_type": 7})
    assert bad["error_code"] == 42


def test_a_standalone_broker_has_nothing_to_elect():
    with EmbeddedCluster() as single, AdminClient(single.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("solo", 2, 1)])
        outcome = admin.elect_leaders(ElectionType.PREFERRED, ["solo"])
        assert all(isinstance(e, ElectionNotNeededError) for e in outcome.values())
        assert sorted(outcome) == [TopicPartition("solo", 0), TopicPartition("solo", 1)]
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.elect_leaders(ElectionType.UNCLEAN, {"solo": [5]})
