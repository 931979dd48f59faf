"""librdkafka's mock cluster: an independent Kafka-protocol broker our client is tested against."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import confluent_kafka
import pytest


@pytest.fixture(scope="module")
def mock_cluster_factory() -> Iterator[Callable[[int], str]]:
    """Starts mock clusters (bootstrap servers returned); each lives while its handle does,
    so the handles are kept until the module is done."""
    handles: list[confluent_kafka.Producer] = []

    def start(num_brokers: int = 3) -> str:
        handle = confluent_kafka.Producer({"test.mock.num.brokers": num_brokers,
                                           "log_level": 3})
        handles.append(handle)
        brokers = handle.list_topics(timeout=10).brokers.values()
        return ",".join(f"{b.host}:{b.port}" for b in brokers)

    yield start
    for handle in handles:
        handle.flush(1)


@pytest.fixture(scope="module")
def mock_cluster(mock_cluster_factory: Callable[[int], str]) -> str:
    """Bootstrap servers of a 3-broker mock cluster."""
    return mock_cluster_factory(3)
