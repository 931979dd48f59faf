"""Fault-suite settings: scenarios use the suite's module-scoped real ZooKeeper server
(tests/conftest.py; each scenario works under its own chroot), and every scenario test
(test_scenarios.py) is marked ``faults`` (and ``slow``) for selection: ``pytest -m faults``."""

from __future__ import annotations

from pathlib import Path

import cluster  # noqa: F401  (puts tests/cluster on sys.path for the fixtures below)
import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        if path.parent == _HERE and path.name == "test_scenarios.py":
            item.add_marker(pytest.mark.faults)
            item.add_marker(pytest.mark.slow)
