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
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
        yield cluster


def _group_type(cluster: EmbeddedCluster) -> str:
    with KafkaliteAdmin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        return admin.describe_consumer_groups([GROUP])[GROUP].group_type


def test_a_group_upgrades_and_downgrades_without_losing_a_record(
        cluster: EmbeddedCluster) -> None:
    seen: Counter[bytes] = Counter()
    lock = threading.Lock()
    classic = Member(cluster, "classic", seen, lock, topic=TOPIC, group=GROUP, **CLASSIC)
    modern: Member | None = None
    try:
        until(lambda: len(classic.owned) == PARTITIONS, "the classic member owning all", 60)
        produced = produce(cluster, 0, 60, TOPIC)
        until(lambda: sum(seen.values()) >= 60, "the first 60 records read", 60)
        assert _group_type(cluster) == "classic"

        modern = Member(cluster, "modern", seen, lock, topic=TOPIC, group=GROUP)
        until(lambda: sorted([len(classic.owned), len(modern.owned)]) == [3, 3]
              and not classic.owned & modern.owned, "a 3/3 split across the protocols", 60)
        assert _group_type(cluster) == "consumer"
        produced += produce(cluster, 60, 60, TOPIC)
        until(lambda: sum(seen.values()) >= 120, "120 records read", 60)

        modern.close()
        until(lambda: len(classic.owned) == PARTITIONS, "the classic member owning all again",
              60)
        assert _group_type(cluster) == "classic"
        produced += produce(cluster, 120, 60, TOPIC)
        until(lambda: sum(seen.values()) >= 180, "180 records read", 60)
        with lock:
            assert set(seen) == set(produced)
            assert max(seen.values()) == 1, [v for v, n in seen.items() if n > 1][:5]
        assert classic.errors == [] and modern.errors == []
    finally:
        classic.close()
        if modern is not None:
            modern.close()

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    offsets = admin.list_consumer_group_offsets(
        [confluent_kafka.ConsumerGroupTopicPartitions(GROUP)])[GROUP].result(30)
    assert sum(tp.offset for tp in offsets.topic_partitions) == 180
