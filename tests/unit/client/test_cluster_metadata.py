import pytest

from kafkalite.client.cluster import ClusterMetadata
from kafkalite.errors import ProtocolDecodeError
from kafkalite.structs import BrokerMetadata, PartitionMetadata, TopicPartition

from .metadata_bodies import metadata_body, partition_entry


def realistic_body() -> dict:
    """What a 3-broker cluster answers to Metadata v8 for five requested topics."""
    body = metadata_body({"orders": [0, 1, 2, 0], "__consumer_offsets": 3})
    body["topics"] += [
        {
            "error_code": 0,
            "name": "electing",
            "is_internal": False,
            "partitions": [partition_entry(0, 1, [1, 2]), partition_entry(1, -1, [2, 0], error=5)],
        },
        {"error_code": 3, "name": "missing", "is_internal": False, "partitions": []},
        {"error_code": 29, "name": "secret", "is_internal": False, "partitions": []},
        {"error_code": 17, "name": "bad name!", "is_internal": False, "partitions": []},
    ]
    return body


@pytest.fixture
def cluster() -> ClusterMetadata:
    cluster = ClusterMetadata()
    cluster.update_from_metadata(realistic_body(), now_ms=5_000)
    return cluster


def test_brokers_and_cluster_identity(cluster: ClusterMetadata) -> None:
    assert cluster.brokers() == {
        BrokerMetadata(0, "broker0.example", 9092, "rack-0"),
        BrokerMetadata(1, "broker1.example", 9092, "rack-1"),
        BrokerMetadata(2, "broker2.example", 9092, "rack-0"),
    }
    assert cluster.broker(1) == BrokerMetadata(1, "broker1.example", 9092, "rack-1")
    assert cluster.broker(7) is None
    assert (cluster.cluster_id, cluster.controller_id) == ("lite-cluster-1", 0)


def test_topics_and_errors_are_sorted_into_their_sets(cluster: ClusterMetadata) -> None:
    assert cluster.topics() == {"orders", "__consumer_offsets", "electing"}
    assert cluster.topics(exclude_internal=True) == {"orders", "electing"}
    assert cluster.unknown_topics() == {"missing"}
    assert cluster.unauthorized_topics() == {"secret"}
    assert cluster.invalid_topics() == {"bad name!"}
    assert cluster.partitions_for_topic("missing") is None


def test_partitions_leaders_and_availability(cluster: ClusterMetadata) -> None:
    assert cluster.partitions_for_topic("orders") == {0, 1, 2, 3}
    assert cluster.partitions_for_topic("electing") == {0, 1}
    assert cluster.available_partitions_for_topic("electing") == {0}
    assert cluster.available_partitions_for_topic("missing") == set()
    assert cluster.leader_for(TopicPartition("orders", 3)) == 0
    assert cluster.leader_for(TopicPartition("electing", 1)) is None
    assert cluster.leader_for(TopicPartition("orders", 9)) is None
    assert cluster.leader_epoch_for(TopicPartition("orders", 1)) == 3
    assert cluster.leader_epoch_for(TopicPartition("nope", 0)) is None
    assert cluster.partition_metadata(TopicPartition("electing", 1)) == PartitionMetadata(
        "electing", 1, -1, 3, (2, 0), (), error=5
    )


def test_partitions_for_broker(cluster: ClusterMetadata) -> None:
    assert cluster.partitions_for_broker(1) == {
        TopicPartition("orders", 1),
        TopicPartition("__consumer_offsets", 1),
        TopicPartition("electing", 0),
    }
    assert cluster.partitions_for_broker(9) == set()


def test_refresh_bookkeeping() -> None:
    cluster = ClusterMetadata()
    assert cluster.needs_update(0, 300_000) and cluster.last_successful_refresh_ms == -1
    cluster.update_from_metadata(metadata_body({"t": 1}), now_ms=1_000)
    assert cluster.version == 1 and cluster.last_successful_refresh_ms == 1_000
    assert not cluster.needs_update(300_999, 300_000)
    assert cluster.needs_update(301_000, 300_000)
    assert cluster.request_update() == 1
    assert cluster.needs_update(1_001, 300_000)
    cluster.update_from_metadata(metadata_body({"t": 1}), now_ms=2_000)
    assert cluster.version == 2 and not cluster.needs_update(2_001, 300_000)


def test_a_transient_topic_error_asks_for_another_refresh() -> None:
    body = metadata_body({"t": 1})
    body["topics"].append({"error_code": 5, "name": "new", "is_internal": False, "partitions": []})
    cluster = ClusterMetadata()
    cluster.update_from_metadata(body, now_ms=10)
    assert "new" not in cluster.topics()
    assert cluster.needs_update(11, 300_000)


def test_update_replaces_the_previous_view() -> None:
    cluster = ClusterMetadata()
    cluster.update_from_metadata(metadata_body({"a": 2, "b": 1}), now_ms=1)
    cluster.update_from_metadata(metadata_body({"a": 5}, brokers=(4,)), now_ms=2)
    assert cluster.topics() == {"a"}
    assert cluster.partitions_for_topic("a") == {0, 1, 2, 3, 4}
    assert [b.node_id for b in cluster.brokers()] == [4]


def test_old_response_versions_without_epoch_or_offline_replicas() -> None:
    body = metadata_body({"t": 2})
    for partition in body["topics"][0]["partitions"]:
        del partition["leader_epoch"], partition["offline_replicas"]
    del body["cluster_id"], body["brokers"][0]["rack"]
    cluster = ClusterMetadata()
    cluster.update_from_metadata(body, now_ms=1)
    assert cluster.leader_epoch_for(TopicPartition("t", 0)) == -1
    assert cluster.cluster_id is None and cluster.broker(0).rack is None


@pytest.mark.parametrize(
    ("breaker", "field"),
    [
        (lambda b: b.pop("brokers"), "brokers"),
        (lambda b: b["brokers"][0].pop("host"), "host"),
        (lambda b: b["topics"][0].pop("name"), "name"),
        (lambda b: b["topics"][0]["partitions"][0].pop("leader_id"), "leader_id"),
    ],
)
def test_a_malformed_body_is_a_typed_error_and_keeps_the_old_view(breaker, field: str) -> None:
    cluster = ClusterMetadata()
    cluster.update_from_metadata(metadata_body({"t": 2}), now_ms=1)
    body = metadata_body({"u": 2})
    breaker(body)
    with pytest.raises(ProtocolDecodeError, match=field):
        cluster.update_from_metadata(body, now_ms=2)
    assert cluster.topics() == {"t"} and cluster.version == 1


def test_listeners_see_the_new_view_and_a_failing_one_does_not_block_others() -> None:
    cluster = ClusterMetadata()
    seen = []

    def broken(_: ClusterMetadata) -> None:
        raise RuntimeError("listener bug")

    def record(c: ClusterMetadata) -> None:
        seen.append((c.version, c.partitions_for_topic("t")))

    cluster.add_listener(broken)
    cluster.add_listener(record)
    cluster.update_from_metadata(metadata_body({"t": 2}), now_ms=1)
    cluster.update_from_metadata(metadata_body({"t": 3}), now_ms=2)
    cluster.remove_listener(record)
    cluster.update_from_metadata(metadata_body({"t": 4}), now_ms=3)
    assert seen == [(1, {0, 1}), (2, {0, 1, 2})]
