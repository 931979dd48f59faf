"""``kafka_consumergroup_lag`` and ``kafka_consumergroup_current_offset`` (kafka-exporter's
names) on the ``/metrics`` of a two-broker cluster, parsed with prometheus_client's parser:
only the group's coordinator exports it, and the lag is what the group did not commit, on
a partition led by the coordinator and on one led by the other broker (asked by
ListOffsets)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite.admin import AdminClient, NewTopic
from kafkalite_server import EmbeddedCluster

TOPIC = "lagging"
GROUP = "behind"
PRODUCED = {0: 12, 1: 7}
COMMITTED = {0: 5, 1: 7}

Series = dict[tuple[str, str, int], float]


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(2, config={"group.initial.rebalance.delay.ms": "0",
                                    "kafkalite.metrics.listener": "127.0.0.1:0"}) as cluster:
        yield cluster


def scrape(cluster: EmbeddedCluster, broker: int) -> dict[str, Series]:
    """The lag families' samples of one broker, by name: {(group, topic, partition): value}."""
    endpoint = cluster.brokers[broker].metrics
    assert endpoint is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics",
                                timeout=30) as answer:
        text = answer.read().decode()
    found: dict[str, Series] = {"kafka_consumergroup_lag": {},
                                "kafka_consumergroup_current_offset": {}}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in found:
                labels = sample.labels
                found[sample.name][(labels["consumergroup"], labels["topic"],
                                    int(labels["partition"]))] = sample.value
    return found


def test_the_coordinator_exports_the_lag_the_group_did_not_commit(
        cluster: EmbeddedCluster) -> None:
    admin = AdminClient(bootstrap_servers=cluster.bootstrap_servers)
    # one partition led by each broker: the coordinator leads one, the other is remote
    admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [0], 1: [1]})])
    admin.wait_for_topics([TOPIC])
    admin.close()
    with Producer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        for partition, count in PRODUCED.items():
            for i in range(count):
                producer.send(TOPIC, f"r{i}".encode(), partition=partition)
        producer.flush()
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP,
                        enable_auto_commit=False)
    consumer.assign([TopicPartition(TOPIC, p) for p in COMMITTED])
    consumer.commit({TopicPartition(TOPIC, p): offset for p, offset in COMMITTED.items()})
    consumer.close(autocommit=False)

    scraped = [scrape(cluster, broker) for broker in (0, 1)]
    exporting = [i for i, families in enumerate(scraped)
                 if families["kafka_consumergroup_current_offset"]]
    assert len(exporting) == 1, "exactly one broker, the coordinator, exports the group"
    families = scraped[exporting[0]]
    assert families["kafka_consumergroup_current_offset"] == {
        (GROUP, TOPIC, p): offset for p, offset in COMMITTED.items()}
    assert families["kafka_consumergroup_lag"] == {
        (GROUP, TOPIC, p): PRODUCED[p] - COMMITTED[p] for p in COMMITTED}
