"""Client quotas on ``kafkalite-server`` processes over a real ZooKeeper: a quota set
through one broker lands in Kafka's ``/config/clients`` node with its change notification,
and the other broker, which leads the partition, throttles a librdkafka producer over it
(throttle_cb fires) while a client id without a quota is not throttled."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from test_cluster_processes import Cluster, running_cluster

from kafkalite.admin import AdminClient, ClientQuotaAlteration, ClientQuotaEntity, NewTopic
from tests.conftest import BrokerProcess

KB = 1024
QUOTA = 256 * KB
MESSAGE = b"z" * (32 * KB)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, zookeeper: Any) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("quotas"), zookeeper.connect + "/quotas",
                         BrokerProcess, broker_ids=(1, 2)) as started:
        yield started


def produce(cluster: Cluster, client_id: str, total: int) -> tuple[list[Any], float]:
    events: list[Any] = []
    producer = Producer({"bootstrap.servers": cluster.brokers[1].bootstrap_servers,
                         "client.id": client_id, "linger.ms": 5,
                         "throttle_cb": events.append})
    started = time.monotonic()
    for _ in range(total // len(MESSAGE)):
        producer.produce("quota-zk", MESSAGE, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    return events, time.monotonic() - started


def test_a_quota_set_on_one_broker_throttles_a_producer_on_the_other(cluster: Cluster) -> None:
    throttled = ClientQuotaEntity({"client-id": "zk-throttled"})
    with AdminClient(cluster.brokers[1].bootstrap_servers) as admin:
        admin.create_topics([NewTopic("quota-zk", replica_assignments={0: [2]})],
                            wait_for_metadata=True)
        assert admin.alter_client_quotas([ClientQuotaAlteration(
            throttled, {"producer_byte_rate": QUOTA})]) == {throttled: None}
    node = json.loads(cluster.zk.get("/config/clients/zk-throttled")[0])
    assert node == {"version": 1, "config": {"producer_byte_rate": str(QUOTA)}}
    notices = [json.loads(cluster.zk.get(f"/config/changes/{name}")[0])["entity_path"]
               for name in cluster.zk.get_children("/config/changes")]
    assert "clients/zk-throttled" in notices

    # Broker 2 leads the partition; it learnt the quota from the notification. A first
    # produce may still beat the notification, so the bound is on repeated sends.
    deadline = time.monotonic() + 20
    events: list[Any] = []
    while not events and time.monotonic() < deadline:
        events, elapsed = produce(cluster, "zk-throttled", 4 * QUOTA)
    assert events and all(e.broker_id == 2 and e.throttle_time > 0 for e in events)
    # About one window's worth and one request go through at once; the rest waits.
    assert elapsed >= (4 * QUOTA - 2 * QUOTA - 256 * KB) / QUOTA
    free_events, _ = produce(cluster, "zk-free", 4 * QUOTA)
    assert free_events == []
