from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kafkalite.consumer import Consumer
from kafkalite_server import EmbeddedCluster


@pytest.fixture
def bootstrap(cluster_factory: Callable[..., EmbeddedCluster]) -> str:
    """A one-broker cluster whose auto-created topics have six partitions."""
    return cluster_factory(num_partitions="6").bootstrap_servers


@pytest.fixture
def consumers(bootstrap: str) -> Iterator[Callable[..., Consumer]]:
    """``consumers(*topics, **config)``: consumers closed at the end of the test."""
    made: list[Consumer] = []

    def make(*topics: str, **config: object) -> Consumer:
        settings = {"bootstrap_servers": bootstrap, "auto_offset_reset": "earliest",
                    "heartbeat_interval_ms": 300, "session_timeout_ms": 6000,
                    "request_timeout_ms": 10000, **config}
        consumer = Consumer(*topics, **settings)  # type: ignore[arg-type]
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close(timeout=5)
