"""Stopping and restarting brokers around ZooKeeper's absence (``kafkalite-server``
processes over a real ZooKeeper): a clean stop ends within its bound with ZooKeeper gone,
and a broker restarted before its previous session expired waits for that session instead
of refusing to start."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from zookeeper_server import chrooted_client

from tests.conftest import BrokerProcess

SESSION_MS = 6000
SOCKET_TIMEOUT_MS = 3000
BACKOFF_MS = 500
RETRIES = 1
STOP_BOUND_S = ((RETRIES + 1) * (SOCKET_TIMEOUT_MS + BACKOFF_MS) + SESSION_MS) / 1000 + 15
"""controlled.shutdown.* and the session timeout, with room for a loaded machine."""


def _broker(tmp_path: Path, connect: str, broker_id: int) -> BrokerProcess:
    settings = {"broker.id": broker_id, "zookeeper.connect": connect,
                "zookeeper.session.timeout.ms": SESSION_MS,
                "controller.socket.timeout.ms": SOCKET_TIMEOUT_MS,
                "controlled.shutdown.max.retries": RETRIES,
                "controlled.shutdown.retry.backoff.ms": BACKOFF_MS,
                "default.replication.factor": 2, "offsets.topic.replication.factor": 2}
    return BrokerProcess(tmp_path / f"broker-{broker_id}", [
        arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")])


@pytest.fixture
def zk_client(zookeeper, chroot) -> Iterator[KazooClient]:
    client = chrooted_client(zookeeper.connect + chroot, 10)
    yield client
    client.stop()
    client.close()


def test_a_broker_restarted_before_its_session_expired_waits_for_it(tmp_path, zookeeper,
                                                                    chroot, zk_client):
    broker = _broker(tmp_path, zookeeper.connect + chroot, 1).start()
    try:
        first = zk_client.exists("/brokers/ids/1").ephemeralOwner
        broker.kill()  # its session lives on for up to 6 s
        assert zk_client.exists("/brokers/ids/1").ephemeralOwner == first
        broker.start(timeout=SESSION_MS / 1000 + 30)
        assert zk_client.exists("/brokers/ids/1").ephemeralOwner != first
        assert "is still held by session" in broker.log_text()
    finally:
        broker.kill()


def test_a_clean_stop_ends_within_its_bound_without_zookeeper(tmp_path, zookeeper, chroot):
    brokers = [_broker(tmp_path, zookeeper.connect + chroot, b).start() for b in (1, 2)]
    try:
        zookeeper.stop()
        for broker in brokers:
            started = time.monotonic()
            assert broker.terminate(timeout=STOP_BOUND_S) == 0, (
                f"not stopped cleanly within {STOP_BOUND_S:.0f} s: {broker.log_text()[-3000:]}")
            print(f"stopped in {time.monotonic() - started:.1f} s without ZooKeeper")
    finally:
        for broker in brokers:
            broker.kill()
        zookeeper.start()
