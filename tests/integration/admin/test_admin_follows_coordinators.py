"""Admin calls follow a group coordinator that goes away: the one driver finds the new
coordinator and retries until the deadline, where each call used to give up at once."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from kafkalite import AdminClient, TopicPartition
from kafkalite.admin import NewTopic
from kafkalite.client.client import KafkaClient
from kafkalite.client.coordinator import find_coordinator
from kafkalite.errors import NoError
from kafkalite_server import EmbeddedCluster

LEDGER = TopicPartition("ledger", 0)


@pytest.fixture
def cluster(cluster_factory: Callable[..., EmbeddedCluster]) -> EmbeddedCluster:
    return cluster_factory(3, offsets_topic_replication_factor="3",
                           zookeeper_session_timeout_ms="1000")


@pytest.fixture
def admin(cluster: EmbeddedCluster) -> Iterator[AdminClient]:
    with AdminClient(cluster.bootstrap_servers, default_api_timeout_ms=60000) as client:
        yield client


def coordinator_of(cluster: EmbeddedCluster, group: str) -> int:
    client = KafkaClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        return find_coordinator(client, group, time.monotonic() + 30)
    finally:
        client.close()


def test_group_calls_follow_a_coordinator_that_died(cluster: EmbeddedCluster,
                                                    admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ledger", 1, 3)], wait_for_metadata=True)
    groups = [f"auditors-{n}" for n in range(6)]
    for group in groups:
        admin.alter_group_offsets(group, {LEDGER: 7})
    doomed = coordinator_of(cluster, groups[0])
    cluster.kill_broker(doomed)

    described = admin.describe_groups(groups)
    assert [d.state for d in described.values()] == ["Empty"] * len(groups)
    assert admin.delete_group_offsets(groups[0], [LEDGER]) == {LEDGER: NoError}
    assert admin.alter_group_offsets(groups[1], {LEDGER: 9}) == {LEDGER: NoError}
    assert admin.list_consumer_group_offsets(groups[1])[LEDGER].offset == 9
    assert coordinator_of(cluster, groups[0]) != doomed

