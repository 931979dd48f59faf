"""What a share fetch reads follows the group's settings as they are at that fetch: an
isolation level changed while members read applies from their next fetch, and a ShareFetch
allowing 0 bytes acquires nothing (as in Kafka; librdkafka's share-consumer tests check
both)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalite import Producer, ShareConsumer
from kafkalite.admin import AdminClient, NewTopic
from kafkalite_server import EmbeddedCluster
from tests.integration.share.helpers import set_group_configs
from tests.polling import until

confluent_kafka = pytest.importorskip("confluent_kafka")

BROKER_CONFIG = {"group.share.heartbeat.interval.ms": "500", "num.partitions": "1"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=BROKER_CONFIG) as cluster:
        yield cluster


def _topic(cluster: EmbeddedCluster, name: str, group: str) -> str:
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, 1, 1)])
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest")
    return name


def _transaction(cluster: EmbeddedCluster, topic: str, value: bytes, *, commit: bool) -> None:
    with Producer(bootstrap_servers=cluster.bootstrap_servers,
                  transactional_id=f"{topic}-txn") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, value)
        producer.flush()
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()


def test_an_isolation_level_set_while_members_read_applies_to_their_next_fetch(
        cluster: EmbeddedCluster) -> None:
    group = "isolation-switch"
    topic = _topic(cluster, "isolation-switch", group)
    consumer = ShareConsumer(topic, bootstrap_servers=cluster.bootstrap_servers,
                             group_id=group)
    seen: list[bytes] = []
    try:
        _transaction(cluster, topic, b"aborted-while-uncommitted", commit=False)
        until(lambda: seen.extend(r.value for r in consumer.poll(500)) or bool(seen),
              "the aborted record, read uncommitted")
        assert seen == [b"aborted-while-uncommitted"]

        set_group_configs(cluster.bootstrap_servers, group,
                          share_isolation_level="read_committed")
        # a fetch already waiting was read with the old level; the one after this marker
        # starts after the change
        with Producer(bootstrap_servers=cluster.bootstrap_servers) as producer:
            producer.send(topic, b"marker")
            producer.flush(30)
        until(lambda: seen.extend(r.value for r in consumer.poll(500)) or b"marker" in seen,
              "the marker")
        _transaction(cluster, topic, b"aborted-while-committed", commit=False)
        _transaction(cluster, topic, b"committed", commit=True)
        until(lambda: seen.extend(r.value for r in consumer.poll(500)) or b"committed" in seen,
              "the committed record")
    finally:
        consumer.close()
    assert seen == [b"aborted-while-uncommitted", b"marker", b"committed"]


def test_a_share_fetch_allowing_no_bytes_acquires_nothing(cluster: EmbeddedCluster) -> None:
    from confluent_kafka import ShareConsumer as ConfluentShareConsumer

    group = "no-bytes"
    topic = _topic(cluster, "no-bytes", group)
    with Producer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        for value in (b"a", b"b", b"c"):
            producer.send(topic, value)
        producer.flush(30)
    starved = ConfluentShareConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                      "group.id": group, "fetch.max.bytes": 0})
    starved.subscribe([topic])
    try:
        received = [m for _ in range(6) for m in starved.poll(0.5) if m.error() is None]
    finally:
        starved.close()
    assert received == []
    # the records were never acquired: a member allowed bytes gets all three at once
    consumer = ShareConsumer(topic, bootstrap_servers=cluster.bootstrap_servers,
                             group_id=group)
    seen: list[bytes] = []
    try:
        until(lambda: seen.extend(r.value for r in consumer.poll(500)) or len(seen) >= 3,
              "the three records", 30)
    finally:
        consumer.close()
    assert sorted(seen) == [b"a", b"b", b"c"]
