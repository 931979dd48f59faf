"""One SparkSession (local[2]) and one broker for the whole Spark suite: both are slow to start.

Each test uses its own topics (``new_topic``), so tests stay independent on a shared broker.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install kafkalite[spark])")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install kafkalite[spark])")

from pyspark.sql import SparkSession

import kafkalite.spark
from kafkalite import Producer
from kafkalite_server import EmbeddedCluster


def pytest_configure(config: pytest.Config) -> None:
    # pandas 3 is newer than pyspark's tested range; the source itself does not use pandas.
    config.addinivalue_line(
        "filterwarnings", "ignore:PySpark does not yet fully support pandas:FutureWarning")


BROKER_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "4",
    "num.partitions": "1",
}


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(1, config=BROKER_CONFIG).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def bootstrap(broker: EmbeddedCluster) -> str:
    return broker.bootstrap_servers


@pytest.fixture(scope="session")
def default_bootstrap() -> Iterator[str]:
    """A broker with Kafka's default group settings: a new group's first rebalance waits
    group.initial.rebalance.delay.ms (3 s), as on a real cluster (``broker`` waives it)."""
    cluster = EmbeddedCluster(1, config={"offsets.topic.num.partitions": "4"}).start()
    yield cluster.bootstrap_servers
    cluster.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    # local[2, 2]: two task slots, and a failed task is retried once (as on a real cluster),
    # which the executor-death test of the group members relies on.
    session = kafkalite.spark.local_session("kafkalite-spark-tests", "local[2, 2]", {
        "spark.sql.shuffle.partitions": "2",
        "spark.python.worker.reuse": "true",
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


_topic_ids = itertools.count()


@pytest.fixture
def new_topic(bootstrap: str) -> Iterator[Callable[[int], str]]:
    """``new_topic(partitions)`` creates a fresh topic and returns its name."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)

    def create(partitions: int) -> str:
        name = f"spark-test-{next(_topic_ids)}"
        admin.create_topics([NewTopic(name, partitions, 1)])
        return name

    yield create
    admin.close()


@pytest.fixture
def produce(bootstrap: str) -> Callable[[str, list[dict[str, Any]]], None]:
    """``produce(topic, records)``: send (send() keyword arguments) and await every ack."""

    def send_all(topic: str, records: list[dict[str, Any]]) -> None:
        with Producer(bootstrap_servers=bootstrap, linger_ms=1) as producer:
            futures = [producer.send(topic, **record) for record in records]
            producer.flush()
            for future in futures:
                future.get(timeout=30)

    return send_all
