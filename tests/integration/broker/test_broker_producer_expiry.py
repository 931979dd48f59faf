"""Idempotent producer ids expire (``producer.id.expiration.ms``, checked every
``producer.id.expiration.check.interval.ms``): with a short expiration, confluent-kafka's
producer that stopped writing leaves DescribeProducers, one that keeps writing stays."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from polling import until

from kafkalite import AdminClient, TopicPartition
from kafkalite.admin import NewTopic
from kafkalite_server.embedded import EmbeddedCluster

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "expiring"


def _producer(servers: str) -> object:
    return confluent_kafka.Producer({"bootstrap.servers": servers,
                                     "enable.idempotence": True, "linger.ms": 0})


def _send(producer: object, value: bytes) -> None:
    producer.produce(TOPIC, value=value, partition=0)  # type: ignore[attr-defined]
    assert producer.flush(30) == 0  # type: ignore[attr-defined]


def test_a_producer_that_stopped_writing_expires_and_a_live_one_stays(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    cluster = cluster_factory(producer_id_expiration_ms="1500",
                              producer_id_expiration_check_interval_ms="100")
    servers = cluster.bootstrap_servers
    admin = AdminClient(bootstrap_servers=servers)
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 1)], wait_for_metadata=True)
        partition = TopicPartition(TOPIC, 0)

        def producer_ids() -> set[int]:
            states = admin.describe_producers([partition])[partition].active_producers
            return {state.producer_id for state in states}

        stopped, live = _producer(servers), _producer(servers)
        _send(stopped, b"once")
        _send(live, b"first")
        both = producer_ids()
        assert len(both) == 2

        def only_live_left() -> set[int] | None:
            _send(live, b"again")  # keeps its id alive
            ids = producer_ids()
            return ids if len(ids) == 1 else None

        left = until(only_live_left, "the stopped producer's id to expire", 30,
                     interval=0.3)
        time.sleep(0.2)
        assert left <= both and producer_ids() == left  # the live one is still listed
    finally:
        admin.close()
