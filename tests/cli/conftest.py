"""``cli``: the ``kafkalite`` CLI against a ``broker_process``; ``topic``: a fresh name."""

from __future__ import annotations

from typing import Any

import pytest
from cli_runner import Cli


@pytest.fixture
def cli(broker_process: Any) -> Cli:
    return Cli(broker_process.bootstrap_servers)


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name that says which test made it."""
    return "".join(c if c.isalnum() else "-" for c in request.node.name)[:100]
