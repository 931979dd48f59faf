"""The harness of the group and transaction tests on ``kafkalite-server`` processes over a
real ZooKeeper (consumer groups, share groups, transactions): brokers started under their
own chroot, and killed at the end."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def broker_process_type(request: pytest.FixtureRequest) -> type:
    """tests/conftest.py's ``BrokerProcess``, for a module-scoped fixture (the suite's own
    fixture is function-scoped)."""
    suite = Path(__file__).resolve().parent.parent / "conftest.py"
    for plugin in request.config.pluginmanager.get_plugins():
        if Path(getattr(plugin, "__file__", "") or "").resolve() == suite:
            return plugin.BrokerProcess  # type: ignore[no-any-return]
    raise LookupError("tests/conftest.py is not loaded")


@contextmanager
def started_brokers(request: pytest.FixtureRequest, data: Path, zookeeper_connect: str,
                    chroot: str, settings: Mapping[str, str],
                    broker_ids: tuple[int, ...]) -> Iterator[dict[int, Any]]:
    """Broker processes ``broker_ids`` with ``settings``, started; killed on exit."""
    make = broker_process_type(request)
    started = {b: make(data / f"broker-{b}", [
        arg for key, value in {**settings, "broker.id": str(b),
                               "zookeeper.connect": zookeeper_connect + chroot}.items()
        for arg in ("--set", f"{key}={value}")]) for b in broker_ids}
    try:
        for broker in started.values():
            broker.start()
        yield started
    finally:
        for broker in started.values():
            broker.kill()


def running(brokers: Mapping[int, Any]) -> str:
    """The bootstrap servers of the brokers still running."""
    return ",".join(b.bootstrap_servers for b in brokers.values() if b.process)
