"""Metrics fixtures: the cluster tests' module-scoped real ZooKeeper server and their
``broker_process_type`` (each replication test works under its own chroot)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_CLUSTER_TESTS = Path(__file__).resolve().parent.parent / "cluster"
sys.path.insert(0, str(_CLUSTER_TESTS))  # zookeeper_server, which the fixtures import
_spec = importlib.util.spec_from_file_location("cluster_fixtures",
                                               _CLUSTER_TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_cluster_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cluster_fixtures)

zookeeper = _cluster_fixtures.zookeeper
chroot = _cluster_fixtures.chroot
broker_process_type = _cluster_fixtures.broker_process_type
