"""The ``memory_cluster`` fixture: in-process clusters over the in-memory backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kafkalite_server import EmbeddedCluster


@pytest.fixture
def memory_cluster() -> Iterator[Callable[..., EmbeddedCluster]]:
    started: list[EmbeddedCluster] = []

    def make(num_brokers: int = 3, **config: str) -> EmbeddedCluster:
        settings = {"controlled.shutdown.retry.backoff.ms": "100",
                    "replica.fetch.backoff.ms": "100", **config}
        cluster = EmbeddedCluster(num_brokers, config=settings)
        started.append(cluster.start())
        return cluster
    yield make
    for cluster in started:
        cluster.stop()
