"""A topic created through one broker, then asked for at once through another.

- Metadata with auto-creation, sent to a broker whose cache does not have the topic yet,
  answers LEADER_NOT_AVAILABLE (retriable), never TOPIC_ALREADY_EXISTS: clients treat 36 as
  fatal (KafkaJS's own suite failed on it intermittently).
- CreateTopics answers only once the answering broker's cache has a leader for every new
  partition (Kafka's DelayedCreatePartitions), so the topic is usable through that broker
  as soon as the answer arrives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import LeaderNotAvailableError
from kafkalite_server import EmbeddedCluster

METADATA_VERSION = 8
CREATE_TOPICS_VERSION = 4


def _create_topics(name: str, partitions: int, timeout_ms: int) -> dict[str, Any]:
    return {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout_ms": timeout_ms, "validate_only": False}


def _metadata(name: str, auto_create: bool) -> dict[str, Any]:
    return {"topics": [{"name": name}], "allow_auto_topic_creation": auto_create,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}


def _address(cluster: EmbeddedCluster, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker(broker_id).port}"


def test_auto_creation_racing_a_creation_answers_leader_not_available(
        cluster_factory: Callable[..., EmbeddedCluster], wire: Any) -> None:
    cluster = cluster_factory(num_brokers=3)
    creator_id = cluster.controller_id
    asker_id = next(b.node_id for b in cluster.brokers if b.node_id != creator_id)
    creator = wire(_address(cluster, creator_id))
    asker = wire(_address(cluster, asker_id))
    seen: Counter[int] = Counter()
    for index in range(40):
        name = f"race-{index}"
        # timeout_ms=0: the creator answers at once, before any other broker heard of it.
        created = creator.call(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION,
                               _create_topics(name, 2, 0))
        assert created["topics"][0]["error_code"] == 0, created
        answer = asker.call(ApiKey.METADATA, METADATA_VERSION, _metadata(name, True))
        seen[answer["topics"][0]["error_code"]] += 1
    assert set(seen) <= {0, LeaderNotAvailableError.errno}, seen


def test_create_topics_answers_once_the_answering_broker_knows_the_leaders(
        cluster_factory: Callable[..., EmbeddedCluster], wire: Any) -> None:
    cluster = cluster_factory(num_brokers=3)
    asker_id = next(b.node_id for b in cluster.brokers if b.node_id != cluster.controller_id)
    client = wire(_address(cluster, asker_id))
    for index in range(10):
        name = f"ready-{index}"
        created = client.call(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION,
                              _create_topics(name, 6, 30_000))
        assert created["topics"][0]["error_code"] == 0, created
        answer = client.call(ApiKey.METADATA, METADATA_VERSION, _metadata(name, False))
        topic = answer["topics"][0]
        assert topic["error_code"] == 0, topic
        assert len(topic["partitions"]) == 6
        assert all(p["error_code"] == 0 and p["leader_id"] >= 0 for p in topic["partitions"])
