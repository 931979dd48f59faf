"""Fault-suite fixtures: the cluster tests' module-scoped real ZooKeeper server (each
scenario works under its own chroot), and every scenario test (test_scenarios.py) marked ``faults`` (and
``slow``) for selection: ``pytest -m faults``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import cluster  # noqa: F401  (puts tests/cluster on sys.path for the fixtures below)
import pytest

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "cluster_fixtures", _HERE.parent / "cluster" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_cluster_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cluster_fixtures)

zookeeper = _cluster_fixtures.zookeeper


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        if path.parent == _HERE and path.name == "test_scenarios.py":
            item.add_marker(pytest.mark.faults)
            item.add_marker(pytest.mark.slow)
