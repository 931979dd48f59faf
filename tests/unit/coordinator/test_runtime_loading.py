"""The coordinator runtime's loading, driven on a real log: the first chunk at once, the
rest in a task that lets the event loop run between chunks; leadership lost mid-load
stops it; a newer leader epoch of a held leadership does not reload.

The replica manager and the metadata cache are stand-ins holding only what the runtime
asks of them (a leader's log, leadership listeners, the topic's partitions)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafkalite.protocol.errors import CoordinatorLoadInProgressError, NotCoordinatorError
from kafkalite.records import Record, encode_batch
from kafkalite_server.coordinator.runtime import (
    LOAD_CHUNK_BYTES,
    CoordinatorRuntime,
    InternalTopic,
)
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log

TOPIC = "__state"
VALUE = b"v" * 50_000
BATCHES = 3 * LOAD_CHUNK_BYTES // len(VALUE) + 5  # a bit over three chunks


class Replicas:
    def __init__(self, log: Log) -> None:
        self.log = log
        self.listeners: list[Any] = []

    def add_leadership_listener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def leader_partition(self, topic: str, index: int) -> Any:
        return SimpleNamespace(log=self.log, high_watermark=self.log.log_end_offset)


class Metadata:
    has_first_update = True

    def partitions_of(self, topic: str) -> list[object]:
        return [object()]

    def on_topics_deleted(self, listener: Callable[[set[str]], None]) -> None:
        pass

    async def wait_first_update(self, timeout_s: float) -> bool:
        return True


class Recorder:
    """A state machine that remembers what the runtime fed it."""

    def __init__(self) -> None:
        self.chunks: list[int] = []
        self.completed = 0
        self.unloaded: list[int] = []

    def loader(self, partition: int) -> Recorder:
        return self

    def load(self, records: Sequence[Record]) -> None:
        self.chunks.append(len(records))

    def complete(self) -> None:
        self.completed += 1

    def unload(self, partition: int) -> None:
        self.unloaded.append(partition)

    def topics_deleted(self, deleted: Callable[[str], bool], partition: int | None) -> None:
        pass


def run(tmp_path: Path, scenario: Callable[[CoordinatorRuntime, Recorder],
                                           Coroutine[Any, Any, None]]) -> None:
    log = Log.open(tmp_path / f"{TOPIC}-0", LogConfig())
    for n in range(BATCHES):
        log.append_as_leader(bytearray(encode_batch([(b"k%d" % n, VALUE, 0, ())])),
                             leader_epoch=0)

    async def main() -> None:
        tasks: set[asyncio.Task[None]] = set()

        def spawn(coro: Any, name: str) -> asyncio.Task[None]:
            task = asyncio.ensure_future(coro)
            tasks.add(task)
            return task

        runtime = CoordinatorRuntime(
            InternalTopic(TOPIC, 1, replication_factor=lambda: 1, configs=lambda _: {},
                          commit_timeout_ms=1000),
            replicas=Replicas(log), metadata=Metadata(),  # type: ignore[arg-type]
            controller=SimpleNamespace(create_topic=None), spawn=spawn)
        machine = Recorder()
        runtime.serve(machine)
        await scenario(runtime, machine)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    log.close()


def test_a_large_partition_loads_a_chunk_at_a_time(tmp_path: Path) -> None:
    async def scenario(runtime: CoordinatorRuntime, machine: Recorder) -> None:
        runtime.on_become_leader(TOPIC, 0, 5)
        # One chunk now; the requests of the other connections run before the next.
        assert len(machine.chunks) == 1 and machine.completed == 0
        assert runtime.ownership.error_for("key") == CoordinatorLoadInProgressError.errno
        for _turn in range(100):
            if machine.completed:
                break
            await asyncio.sleep(0)
        assert machine.completed == 1 and len(machine.chunks) >= 4
        assert sum(machine.chunks) == BATCHES
        assert runtime.ownership.error_for("key") == 0
        assert runtime.ownership.epoch(0) == 5

        runtime.on_become_leader(TOPIC, 0, 6)  # an ISR change: the same leadership
        assert machine.completed == 1 and runtime.ownership.epoch(0) == 6

    run(tmp_path, scenario)


def test_leadership_lost_mid_load_stops_it(tmp_path: Path) -> None:
    async def scenario(runtime: CoordinatorRuntime, machine: Recorder) -> None:
        runtime.on_become_leader(TOPIC, 0, 5)
        runtime.on_resign(TOPIC, 0)
        for _turn in range(20):
            await asyncio.sleep(0)
        assert machine.completed == 0 and machine.unloaded == [0]
        assert len(machine.chunks) == 1
        assert runtime.ownership.error_for("key") == NotCoordinatorError.errno

    run(tmp_path, scenario)


@pytest.mark.parametrize("failing", ["load", "complete"])
def test_a_failed_load_unloads_the_partition(tmp_path: Path, failing: str) -> None:
    async def scenario(runtime: CoordinatorRuntime, machine: Recorder) -> None:
        def fail(*_: object) -> None:
            raise ValueError("unreadable")
        setattr(machine, failing, fail)
        runtime.on_become_leader(TOPIC, 0, 5)
        for _turn in range(100):
            await asyncio.sleep(0)
        assert machine.unloaded == [0]
        assert runtime.ownership.error_for("key") == NotCoordinatorError.errno

    run(tmp_path, scenario)
