"""``kafkalite.metrics.listener``: a broker's ``/metrics`` scraped over HTTP and parsed with
prometheus_client's own parser, the values checked against the traffic a real client
(confluent-kafka) produced and consumed."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from kafkalite.errors import ConfigError
from kafkalite_server import EmbeddedCluster
from kafkalite_server.config import BrokerConfig

RECORDS = 37
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(1, config={"group.initial.rebalance.delay.ms": "0",
                                         "offsets.topic.num.partitions": "1",
                                         "kafkalite.metrics.listener": "127.0.0.1:0"}).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def scrape(cluster: EmbeddedCluster) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics`` as {(name, sorted labels): value}."""
    endpoint = cluster.brokers[0].metrics
    assert endpoint is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics",
                                timeout=30) as answer:
        text = answer.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_traffic_counts_match_what_was_produced_and_consumed(broker: EmbeddedCluster) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce("metered", f"value-{i}".encode(), key=b"k")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "metered",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["metered"])
    read = 0
    for _ in range(200):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read += 1
        if read == RECORDS:
            break
    consumer.commit(asynchronous=False)  # all it read: its lag is 0
    consumer.close()
    assert read == RECORDS

    metrics = scrape(broker)
    topic = (("topic", "metered"),)
    assert metrics["kafka_server_brokertopicmetrics_messagesin_total", topic] == RECORDS
    assert metrics["kafka_server_brokertopicmetrics_bytesin_total", topic] > 0
    assert metrics["kafka_server_brokertopicmetrics_bytesout_total", topic] > 0
    assert metrics["kafka_server_brokertopicmetrics_failedproducerequests_total", topic] == 0
    group = (("consumergroup", "metered"), ("partition", "0"), ("topic", "metered"))
    assert metrics["kafka_consumergroup_current_offset", group] == RECORDS
    assert metrics["kafka_consumergroup_lag", group] == 0
    all_topics = metrics["kafka_server_brokertopicmetrics_messagesin_total", ()]
    assert all_topics >= RECORDS  # with the group's offsets-topic records, if any
    log_size = metrics["kafka_log_log_size", (("partition", "0"), ("topic", "metered"))]
    assert log_size >= metrics["kafka_server_brokertopicmetrics_bytesin_total", topic]
    assert metrics["kafka_log_log_logendoffset",
                   (("partition", "0"), ("topic", "metered"))] == RECORDS

    produces = sum(value for (name, labels), value in metrics.items()
                   if name == "kafka_network_requestmetrics_requests_total"
                   and dict(labels)["request"] == "Produce")
    assert produces >= 1
    assert any(name == "kafka_network_requestmetrics_requests_total"
               and dict(labels)["request"] == "FetchConsumer" for name, labels in metrics)
    p99 = metrics["kafka_network_requestmetrics_totaltimems",
                  (("quantile", "0.99"), ("request", "Produce"))]
    assert p99 > 0
    assert metrics["kafka_network_requestmetrics_totaltimems_count",
                   (("request", "Produce"),)] == produces


def test_broker_and_controller_gauges(broker: EmbeddedCluster) -> None:
    metrics = scrape(broker)
    assert metrics["kafka_controller_kafkacontroller_activecontrollercount", ()] == 1
    assert metrics["kafka_controller_kafkacontroller_offlinepartitionscount", ()] == 0
    assert metrics["kafka_server_replicamanager_underreplicatedpartitions", ()] == 0
    hosted = len(broker.brokers[0].replica_manager.partitions)
    assert hosted >= 1
    assert metrics["kafka_server_replicamanager_partitioncount", ()] == hosted
    assert metrics["kafka_server_replicamanager_leadercount", ()] == hosted
    assert metrics["kafka_server_kafkaserver_brokerstate", ()] == 3
    assert metrics["kafka_server_replicamanager_isrshrinks_total", ()] == 0
    assert ("kafka_server_delayedoperationpurgatory_purgatorysize",
            (("delayedoperation", "Fetch"),)) in metrics
    assert metrics["kafka_server_replicafetchermanager_maxlag", (("clientid", "Replica"),)] == 0
    assert metrics["process_resident_memory_bytes", ()] > 0
    assert metrics["process_open_fds", ()] > 0


@pytest.mark.parametrize("value", ["9404", "host:", "host:port", "host:70000", ""])
def test_a_bad_listener_names_the_key(value: str) -> None:
    with pytest.raises(ConfigError, match=r"kafkalite\.metrics\.listener"):
        BrokerConfig.from_properties({"kafkalite.metrics.listener": value})


def test_the_grafana_dashboard_queries_only_exported_metrics(broker: EmbeddedCluster) -> None:
    dashboard = json.loads((REPO_ROOT / "docs" / "grafana-dashboard.json").read_text())
    queried = {name for panel in dashboard["panels"] for target in panel["targets"]
               for name in re.findall(r"\b(?:kafka|process)_[a-z_]+", target["expr"])}
    exported = {name for name, _labels in scrape(broker)}
    assert len(queried) >= 10
    assert queried - exported == set()
