"""``cli``: the ``kafkalite`` CLI against a ``broker_process``; ``topic``: a fresh name.

``broker_process`` runs with the test settings (no initial rebalance delay, for speed);
``default_cli`` talks to a broker with Kafka's default ``group.initial.rebalance.delay.ms``
(3 s), where a group's first join takes seconds, as it does against a real cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import Cli

from tests.conftest import BrokerProcess

KAFKA_DEFAULT_REBALANCE_DELAY = ["--set", "group.initial.rebalance.delay.ms=3000"]


@pytest.fixture
def cli(broker_process: Any) -> Cli:
    return Cli(broker_process.bootstrap_servers)


@pytest.fixture
def default_cli(tmp_path: Path) -> Iterator[Cli]:
    broker = BrokerProcess(tmp_path / "default-data", KAFKA_DEFAULT_REBALANCE_DELAY).start()
    yield Cli(broker.bootstrap_servers)
    broker.kill()


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name that says which test made it."""
    return "".join(c if c.isalnum() else "-" for c in request.node.name)[:100]
