"""The in-memory coordination backend's sessions, on a fake clock."""

from __future__ import annotations

import pytest

from kafkalite_server.cluster.coordination import EventType, SessionExpiredError, WatchEvent
from kafkalite_server.cluster.memory_store import MemoryEnsemble


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_paused_session_expires_after_its_timeout_and_hears_it_on_resume(clock):
    ensemble = MemoryEnsemble(clock)
    broker, controller = ensemble.connect(6000), ensemble.connect(6000)
    controller.ensure_path("/brokers/ids")
    broker.create("/brokers/ids/1", ephemeral=True)
    seen: list[WatchEvent] = []
    controller.children("/brokers/ids", watch=seen.append)
    lost: list[str] = []
    broker.on_session_lost(lambda: lost.append("lost"))
    broker.pause()
    clock.now += 6000
    assert ensemble.tick() == []  # not yet past the timeout
    clock.now += 1
    assert ensemble.tick() == [broker.session_id]
    assert seen == [WatchEvent(EventType.CHILD, "/brokers/ids")]
    assert controller.children("/brokers/ids") == []
    assert lost == []  # a paused client cannot know yet
    broker.resume()
    assert lost == ["lost"]
    with pytest.raises(SessionExpiredError):
        broker.create("/brokers/ids/1", ephemeral=True)


def test_a_live_session_never_expires_by_the_clock(clock):
    ensemble = MemoryEnsemble(clock)
    client = ensemble.connect(6000)
    client.create("/e", ephemeral=True)
    clock.now += 60_000
    assert ensemble.tick() == []
    assert client.exists("/e") is not None


def test_expire_removes_ephemerals_and_tells_the_client(clock):
    ensemble = MemoryEnsemble(clock)
    client, other = ensemble.connect(), ensemble.connect()
    client.create("/controller", b"1", ephemeral=True)
    lost: list[str] = []
    client.on_session_lost(lambda: lost.append("lost"))
    ensemble.expire(ensemble.owner_of("/controller"))
    assert lost == ["lost"] and other.exists("/controller") is None


def test_sequential_nodes_count_per_parent(clock):
    client = MemoryEnsemble(clock).connect()
    client.ensure_path("/isr_change_notification")
    first = client.create("/isr_change_notification/isr_change_", sequential=True)
    second = client.create("/isr_change_notification/isr_change_", sequential=True)
    assert (first, second) == ("/isr_change_notification/isr_change_0000000000",
                               "/isr_change_notification/isr_change_0000000001")


def test_a_snapshot_keeps_persistent_nodes_with_versions_and_drops_sessions(clock):
    ensemble = MemoryEnsemble(clock)
    client = ensemble.connect(6000)
    client.ensure_path("/brokers/ids")
    client.create("/brokers/ids/1", b"me", ephemeral=True)
    client.create("/controller_epoch", b"\x00\xff binary")
    client.set("/controller_epoch", b"2")
    client.ensure_path("/isr_change_notification")
    first = client.create("/isr_change_notification/isr_change_", b"", sequential=True)

    restored = MemoryEnsemble.restored(ensemble.snapshot(), clock)
    again = restored.connect(6000)
    assert again.children("/brokers/ids") == []  # ephemeral: gone with its session
    data, stat = again.get("/controller_epoch")
    assert (data, stat.version) == (b"2", 1)
    again.set("/controller_epoch", b"3", version=1)  # a conditional write still matches
    second = again.create("/isr_change_notification/isr_change_", b"", sequential=True)
    assert second > first  # sequence numbers go on from where they were
    assert MemoryEnsemble.restored(restored.snapshot(), clock).connect().get(
        "/controller_epoch")[0] == b"3"
