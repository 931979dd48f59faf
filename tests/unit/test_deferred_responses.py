"""Deferred Produce answers: written in request order whatever order their waits end in,
their bytes held until written, at most the limit waiting, and a failure closes the
connection."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafkalite_server.network.deferred_responses import DeferredResponses


class FakeWriter:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _setup(limit: int = 10) -> tuple[DeferredResponses, list[Any], list[int], FakeWriter]:
    written: list[Any] = []
    released: list[int] = []
    writer = FakeWriter()

    async def write(_writer: Any, chunks: list[Any]) -> None:
        written.extend(chunks)

    responses = DeferredResponses(writer, write,  # type: ignore[arg-type]
                                  lambda: released.append(responses.held), limit)
    return responses, written, released, writer


def test_answers_leave_in_request_order_and_free_their_bytes() -> None:
    async def scenario() -> tuple[list[Any], list[int]]:
        responses, written, released, _writer = _setup()
        first: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        second: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        responses.defer(asyncio.ensure_future(first), 100)
        responses.defer(asyncio.ensure_future(second), 50)
        assert responses.held == 150
        second.set_result(["b"])  # the later request's wait ends first
        await asyncio.sleep(0.01)
        assert written == []
        first.set_result(["a"])
        await responses.drained()
        return written, released

    written, released = asyncio.run(scenario())
    assert written == ["a", "b"]
    assert released == [50, 0]


def test_room_waits_below_the_limit() -> None:
    async def scenario() -> bool:
        responses, _written, _released, _writer = _setup(limit=1)
        waiting: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        responses.defer(asyncio.ensure_future(waiting), 1)
        room = asyncio.ensure_future(responses.room())
        await asyncio.sleep(0.01)
        blocked = not room.done()
        waiting.set_result(["a"])
        await asyncio.wait_for(room, 1)
        return blocked

    assert asyncio.run(scenario())


def test_a_failed_request_closes_the_connection_and_is_raised() -> None:
    async def scenario() -> FakeWriter:
        responses, _written, _released, writer = _setup()

        async def fails() -> list[Any]:
            raise ConnectionResetError("gone")

        responses.defer(asyncio.ensure_future(fails()), 1)
        with pytest.raises(ConnectionResetError):
            await responses.drained()
        responses.close()
        return writer

    assert asyncio.run(scenario()).closed
