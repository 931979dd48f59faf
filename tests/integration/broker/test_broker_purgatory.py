"""The purgatory on its own: completion by event, by timeout, and watcher cleanup."""

from __future__ import annotations

import asyncio

from kafkalite_server.replication.purgatory import DelayedOperation, Purgatory


class Flag(DelayedOperation):
    def __init__(self, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.ready = False

    def is_satisfied(self) -> bool:
        return self.ready


def test_an_event_completes_only_satisfied_operations():
    async def scenario() -> tuple[bool, bool, int]:
        purgatory = Purgatory("test")
        ready, idle = Flag(60_000), Flag(50)
        first = asyncio.ensure_future(purgatory.wait(ready, ["a", "b"]))
        second = asyncio.ensure_future(purgatory.wait(idle, ["a"]))
        await asyncio.sleep(0)
        assert purgatory.watched == 3
        assert purgatory.check_and_complete("a") == 0
        ready.ready = True
        assert purgatory.check_and_complete("b") == 1
        return await first, await second, purgatory.watched

    completed, timed_out_completed, left = asyncio.run(scenario())
    assert completed is True
    assert timed_out_completed is False
    assert left == 0


def test_an_already_satisfied_operation_does_not_wait():
    async def scenario() -> tuple[bool, int]:
        purgatory = Purgatory("test")
        operation = Flag(60_000)
        operation.ready = True
        return await purgatory.wait(operation, ["a"]), purgatory.watched

    assert asyncio.run(scenario()) == (True, 0)
