"""Cluster fixtures: a real ZooKeeper server (Debian's package) per test module, and a
``connect`` parameter that runs contract tests over every backend (in memory, the durable
local store, a real ZooKeeper)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from zookeeper_server import ZooKeeperServer, zookeeper_available

from kafkalite_server.cluster.coordination import Coordination
from kafkalite_server.cluster.local_store import LocalEnsemble
from kafkalite_server.cluster.memory_store import MemoryEnsemble


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    if not zookeeper_available():
        pytest.fail("Debian's zookeeper package and java are needed (.ci/run installs them)")
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def chroot(request: pytest.FixtureRequest) -> str:
    """A fresh chroot per test, so tests sharing a server never see each other's nodes."""
    return "/" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:80]


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


@pytest.fixture
def broker_process_type(request: pytest.FixtureRequest) -> type:
    """The suite-wide ``BrokerProcess`` helper (tests/conftest.py; both files are named
    conftest, so it is found among the loaded plugins rather than imported)."""
    suite = Path(__file__).resolve().parent.parent / "conftest.py"
    for plugin in request.config.pluginmanager.get_plugins():
        if Path(getattr(plugin, "__file__", "") or "").resolve() == suite:
            return plugin.BrokerProcess  # type: ignore[no-any-return]
    raise LookupError("tests/conftest.py is not loaded")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.slow)
