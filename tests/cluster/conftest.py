"""Cluster fixtures (the real ZooKeeper server and chroot are the suite's, in
tests/conftest.py): a ``connect`` parameter that runs contract tests over every backend (in memory, the durable
local store, a real ZooKeeper)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalite_server.cluster.coordination import Coordination
from kafkalite_server.cluster.local_store import LocalEnsemble
from kafkalite_server.cluster.memory_store import MemoryEnsemble


@pytest.fixture(params=["memory", "local", "zookeeper"])
def connect(request: pytest.FixtureRequest, chroot: str, tmp_path: Path
            ) -> Iterator[Callable[..., Coordination]]:
    """``connect(session_timeout_ms=...)`` opens a session on the backend under test."""
    opened: list[Coordination] = []
    local: LocalEnsemble | None = None
    if request.param in ("memory", "local"):
        ensemble = MemoryEnsemble() if request.param == "memory" else LocalEnsemble.open(
            tmp_path / "store")
        local = ensemble if isinstance(ensemble, LocalEnsemble) else None

        def make(session_timeout_ms: int = 6000) -> Coordination:
            opened.append(ensemble.connect(session_timeout_ms))
            return opened[-1]
    else:
        from kafkalite_server.cluster.zk_store import ZooKeeperCoordination
        server = request.getfixturevalue("zookeeper")

        def make(session_timeout_ms: int = 6000) -> Coordination:
            opened.append(ZooKeeperCoordination(server.connect + chroot,
                                                session_timeout_ms=session_timeout_ms,
                                                connection_timeout_ms=10_000))
            return opened[-1]
    yield make
    for client in opened:
        client.close()
    if local is not None:
        local.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.slow)
