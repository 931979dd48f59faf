"""KIP-848's online migration seen by confluent-kafka on one broker: a classic member
(``group.protocol=classic``) owns a 6-partition topic; a ``group.protocol=consumer`` member
joining upgrades the group to a consumer group, in which the classic member stays and gets
its share through JoinGroup/SyncGroup; when the consumer-protocol member leaves, the group
is classic again and the classic member takes everything back. Every record is read exactly
once and the committed offsets carry over both ways."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.polling import until

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafkalite.admin import AdminClient as KafkaliteAdmin  # noqa: E402
from kafkalite_server import EmbeddedCluster  # noqa: E402
from tests.integration.consumer.kip848_members import Member, produce  # noqa: E402

TOPIC, GROUP, PARTITIONS = "migration-orders", "migration-group", 6
BROKER_CONFIG = {"group.consumer.heartbeat.interval.ms": "300",
                 "group.initial.rebalance.delay.ms": "0"}
CLASSIC = {"protocol": "classic", "heartbeat.interval.ms": 300, "session.timeout.ms": 6000}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=BROKER_CONFIG) as cluster:
        yield cluster


def _group_type(cluster: EmbeddedCluster, group: str) -> str:
    with KafkaliteAdmin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        return admin.describe_consumer_groups([group])[group].group_type


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_a_group_upgrades_and_downgrades_without_losing_a_record(
        cluster: EmbeddedCluster, strategy: str) -> None:
    """An eager classic member revokes everything and rejoins twice per rebalance; a
    cooperative one keeps what it keeps and says what it owns when it rejoins."""
    topic, group = f"{TOPIC}-{strategy}", f"{GROUP}-{strategy}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    seen: Counter[bytes] = Counter()
    lock = threading.Lock()
    classic = Member(cluster, "classic", seen, lock, topic=topic, group=group,
                     **{**CLASSIC, "partition.assignment.strategy": strategy})
    modern: Member | None = None
    try:
        until(lambda: len(classic.owned) == PARTITIONS, "the classic member owning all", 60)
        produced = produce(cluster, 0, 60, topic)
        until(lambda: sum(seen.values()) >= 60, "the first 60 records read", 60)
        assert _group_type(cluster, group) == "classic"

        modern = Member(cluster, "modern", seen, lock, topic=topic, group=group)
        until(lambda: sorted([len(classic.owned), len(modern.owned)]) == [3, 3]
              and not classic.owned & modern.owned, "a 3/3 split across the protocols", 60)
        assert _group_type(cluster, group) == "consumer"
        produced += produce(cluster, 60, 60, topic)
        until(lambda: sum(seen.values()) >= 120, "120 records read", 60)

        modern.close()
        until(lambda: len(classic.owned) == PARTITIONS, "the classic member owning all again",
              60)
        assert _group_type(cluster, group) == "classic"
        produced += produce(cluster, 120, 60, topic)
        until(lambda: sum(seen.values()) >= 180, "180 records read", 60)
        with lock:
            assert set(seen) == set(produced)
            assert max(seen.values()) == 1, [v for v, n in seen.items() if n > 1][:5]
        assert classic.errors == [] and modern.errors == []
    finally:
        classic.close()
        if modern is not None:
            modern.close()

    offsets = admin.list_consumer_group_offsets(
        [confluent_kafka.ConsumerGroupTopicPartitions(group)])[group].result(30)
    assert sum(tp.offset for tp in offsets.topic_partitions) == 180
