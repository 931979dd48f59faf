"""AdminClient against an EmbeddedCluster: topics, partitions, configs, groups and lag."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalite import AdminClient, Consumer, NewPartitions, NewTopic
from kafkalite.admin import ConfigResource
from kafkalite.errors import (
    InvalidPartitionsError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster
from tests.integration.consumer.helpers import poll_until, produce


@pytest.fixture
def admin(cluster: EmbeddedCluster) -> Iterator[AdminClient]:
    with AdminClient(cluster.bootstrap_servers, request_timeout_ms=10000) as client:
        yield client


def test_topic_lifecycle(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("orders", 3, 1, config={"retention.ms": "60000"})])
    assert "orders" in admin.list_topics()
    description = admin.describe_topics(["orders"])["orders"]
    assert [p.partition for p in description.partitions] == [0, 1, 2]
    assert not description.internal
    with pytest.raises(TopicAlreadyExistsError, match="orders"):
        admin.create_topics([NewTopic("orders", 1, 1)])

    admin.create_partitions({"orders": NewPartitions(5)})
    assert len(admin.describe_topics(["orders"])["orders"].partitions) == 5
    with pytest.raises(InvalidPartitionsError, match="orders"):
        admin.create_partitions({"orders": NewPartitions(2)})

    resource = ConfigResource("topic", "orders")
    assert admin.describe_configs([resource])[resource]["retention.ms"] == "60000"

    admin.delete_topics(["orders"])
    assert "orders" not in admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError, match="orders"):
        admin.describe_topics(["orders"])


def test_groups_offsets_and_lag(cluster: EmbeddedCluster, admin: AdminClient) -> None:
    bootstrap = cluster.bootstrap_servers
    admin.create_topics([NewTopic("lagging", 2, 1)])
    produce(bootstrap, "lagging", 2, 4)
    with Consumer("lagging", bootstrap_servers=bootstrap, group_id="watchers",
                  auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        poll_until([consumer], lambda: len(consumer.assignment()) == 2)
        consumer.commit({TopicPartition("lagging", 0): 3, TopicPartition("lagging", 1): 4})
        assert [g.group_id for g in admin.list_groups()] == ["watchers"]
        assert [g.group_id for g in admin.list_groups(states_filter=["stable"])] == ["watchers"]
        assert admin.list_groups(states_filter=["Empty"]) == []
        description = admin.describe_groups(["watchers"])["watchers"]
        assert description.state == "Stable"
        assert description.protocol == "range"
        (member,) = description.members
        assert member.member_id == consumer.member_id
        assert member.assignment == [TopicPartition("lagging", 0), TopicPartition("lagging", 1)]
    offsets = admin.list_consumer_group_offsets("watchers")
    assert {tp: meta.offset for tp, meta in offsets.items()} == {
        TopicPartition("lagging", 0): 3, TopicPartition("lagging", 1): 4}
    assert admin.consumer_group_lag("watchers") == {
        TopicPartition("lagging", 0): (3, 4, 1), TopicPartition("lagging", 1): (4, 4, 0)}
    assert admin.describe_groups(["watchers"])["watchers"].state == "Empty"
    assert [g.group_id for g in admin.list_groups(states_filter=["Empty"])] == ["watchers"]


def test_confluent_lists_groups_with_states_and_types(cluster: EmbeddedCluster,
                                                       admin: AdminClient) -> None:
    """ListGroups v4/v5 as librdkafka sends it: the states filter, each group's state, and
    its type (every group here is a classic one)."""
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient as ConfluentAdmin

    admin.create_topics([NewTopic("listed", 1, 1)])
    with Consumer("listed", bootstrap_servers=cluster.bootstrap_servers, group_id="listed-g",
                  enable_auto_commit=False) as consumer:
        poll_until([consumer], lambda: len(consumer.assignment()) == 1)
        peer = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap_servers})

        def listed(**filters: object) -> dict[str, tuple[object, object]]:
            result = peer.list_consumer_groups(request_timeout=10, **filters).result()
            assert not result.errors
            return {g.group_id: (g.state, g.type) for g in result.valid}

        assert listed() == {"listed-g": (ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC)}
        assert listed(states={ConsumerGroupState.STABLE}) == {
            "listed-g": (ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC)}
        assert listed(states={ConsumerGroupState.EMPTY}) == {}
        assert listed(types={ConsumerGroupType.CONSUMER}) == {}
        assert "listed-g" in listed(types={ConsumerGroupType.CLASSIC})


def test_unknown_group_describes_as_dead(admin: AdminClient) -> None:
    """DescribeGroups answers an unknown group with state Dead, not an error (as Kafka)."""
    description = admin.describe_groups(["nobody"])["nobody"]
    assert description.state == "Dead" and description.members == []
    assert admin.consumer_group_lag("nobody") == {}
