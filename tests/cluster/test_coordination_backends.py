"""The coordination contract, run over the in-memory backend and a real ZooKeeper."""

from __future__ import annotations

import threading

import pytest

from kafkalite_server.cluster.coordination import (
    BadVersionError,
    Check,
    Create,
    EventType,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SetData,
    WatchEvent,
)

WAIT_S = 10


class Events:
    """Collects watch events from the backend's thread."""

    def __init__(self) -> None:
        self.events: list[WatchEvent] = []
        self._arrived = threading.Event()

    def __call__(self, event: WatchEvent) -> None:
        self.events.append(event)
        self._arrived.set()

    def wait(self, timeout_s: float = WAIT_S) -> list[WatchEvent]:
        assert self._arrived.wait(timeout_s), "no watch event arrived"
        return self.events


def test_persistent_nodes_and_conditional_writes(connect):
    zk = connect()
    zk.create("/a/b", b"one", makepath=True)
    data, stat = zk.get("/a/b")
    assert (data, stat.version, stat.ephemeral_owner) == (b"one", 0, 0)
    assert zk.set("/a/b", b"two", version=0).version == 1
    with pytest.raises(BadVersionError):
        zk.set("/a/b", b"stale", version=0)
    with pytest.raises(NodeExistsError):
        zk.create("/a/b")
    with pytest.raises(NoNodeError):
        zk.get("/a/missing")
    with pytest.raises(NotEmptyError):
        zk.delete("/a")
    assert zk.children("/a") == ["b"]
    zk.delete("/a", recursive=True)
    assert zk.exists("/a") is None


def test_ephemeral_nodes_go_with_their_session_and_watches_fire(connect):
    owner, observer = connect(), connect()
    observer.ensure_path("/brokers/ids")
    owner.create("/brokers/ids/1", b"{}", ephemeral=True)
    assert observer.exists("/brokers/ids/1").ephemeral_owner == owner.session_id
    node_gone, children_changed = Events(), Events()
    observer.exists("/brokers/ids/1", watch=node_gone)
    observer.children("/brokers/ids", watch=children_changed)
    owner.close()
    assert node_gone.wait()[0] == WatchEvent(EventType.DELETED, "/brokers/ids/1")
    assert children_changed.wait()[0] == WatchEvent(EventType.CHILD, "/brokers/ids")
    assert observer.children("/brokers/ids") == []


def test_a_batch_is_all_or_nothing(connect):
    zk = connect()
    zk.create("/controller_epoch", b"4")
    with pytest.raises(BadVersionError):
        zk.commit([Create("/controller", b"x", ephemeral=True),
                   SetData("/controller_epoch", b"5", version=7)])
    assert zk.exists("/controller") is None
    assert zk.get("/controller_epoch")[0] == b"4"
    zk.commit([Create("/controller", b"x", ephemeral=True),
               SetData("/controller_epoch", b"5", version=0)])
    with pytest.raises(BadVersionError):
        zk.commit([Check("/controller_epoch", 0), SetData("/controller", b"y")])
    assert zk.get("/controller")[0] == b"x"


def test_a_change_fires_a_data_watch_once(connect):
    zk = connect()
    zk.create("/state", b"1")
    changed = Events()
    zk.get("/state", watch=changed)
    zk.set("/state", b"2")
    zk.set("/state", b"3")
    assert changed.wait() == [WatchEvent(EventType.CHANGED, "/state")]


def test_watches_armed_across_a_server_restart_fire_when_the_connection_is_back(
        zookeeper, chroot):
    """kazoo drops armed watches with the connection; the store fires each once the
    connection is back (the session survived), so its owner reads again and re-arms.

    A reconnection attempt that reaches the restarting server too early can wait a whole
    session timeout (kazoo's handshake bound) before the next one, so the session is long
    and the wait covers two attempts."""
    from kafkalite_server.cluster.zk_store import ZooKeeperCoordination

    session_s = 20
    zk = ZooKeeperCoordination(zookeeper.connect + chroot, session_timeout_ms=session_s * 1000,
                               connection_timeout_ms=10_000)
    try:
        zk.create("/config/changes", makepath=True)
        zk.create("/brokers/ids/1", b"{}", ephemeral=True, makepath=True)
        session = zk.session_id
        child_watch, data_watch = Events(), Events()
        zk.children("/config/changes", watch=child_watch)
        zk.exists("/controller", watch=data_watch)
        zookeeper.stop()
        zookeeper.start()
        assert child_watch.wait(2 * session_s) == [
            WatchEvent(EventType.WATCH_LOST, "/config/changes")]
        assert data_watch.wait() == [WatchEvent(EventType.WATCH_LOST, "/controller")]
        assert zk.session_id == session
        assert zk.exists("/brokers/ids/1").ephemeral_owner == session
    finally:
        zk.close()
