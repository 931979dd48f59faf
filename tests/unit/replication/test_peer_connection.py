"""ResponseReader: the replica fetcher's framing, fed the way a transport feeds it
(``get_buffer`` then ``buffer_updated``), in awkward chunk sizes."""

from __future__ import annotations

import asyncio

import pytest

from kafkalite.protocol.framing import FrameTooLargeError
from kafkalite_server.replication.peer_connection import ResponseReader


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def close(self) -> None:
        self.closed = True


def feed(reader: ResponseReader, data: bytes, chunk: int) -> None:
    """What the selector transport does: receive into the protocol's buffer, at most
    ``chunk`` bytes a time and never more than the buffer it was given."""
    while data:
        buffer = reader.get_buffer(-1)
        n = min(len(buffer), chunk, len(data))
        assert n > 0, "the reader offered an empty buffer"
        buffer[:n] = data[:n]
        reader.buffer_updated(n)
        data = data[n:]


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


@pytest.mark.parametrize("chunk", [1, 3, 5, 1000])
def test_frames_come_out_whole_and_in_order(chunk: int) -> None:
    async def run() -> list[bytes]:
        reader = ResponseReader(1 << 20)
        reader.connection_made(FakeTransport())
        bodies = [b"a" * 7, b"", bytes(range(256)) * 40, b"z"]
        feed(reader, b"".join(frame(body) for body in bodies), chunk)
        return [bytes(await reader.next_frame()) for _ in bodies]

    assert asyncio.run(run()) == [b"a" * 7, b"", bytes(range(256)) * 40, b"z"]


def test_a_waiting_reader_wakes_when_the_frame_completes() -> None:
    async def run() -> bytes:
        reader = ResponseReader(1 << 20)
        reader.connection_made(FakeTransport())
        waiting = asyncio.ensure_future(reader.next_frame())
        feed(reader, frame(b"hello")[:6], 2)
        await asyncio.sleep(0)
        assert not waiting.done()
        feed(reader, frame(b"hello")[6:], 2)
        return bytes(await asyncio.wait_for(waiting, 5))

    assert asyncio.run(run()) == b"hello"


def test_an_oversized_frame_closes_the_connection() -> None:
    async def run() -> tuple[bool, type[BaseException]]:
        transport = FakeTransport()
        reader = ResponseReader(100)
        reader.connection_made(transport)
        feed(reader, (101).to_bytes(4, "big"), 4)
        with pytest.raises(FrameTooLargeError) as raised:
            await reader.next_frame()
        return transport.closed, raised.type

    assert asyncio.run(run()) == (True, FrameTooLargeError)


def test_a_closed_connection_fails_the_waiting_read_after_the_frames_it_delivered() -> None:
    async def run() -> bytes:
        reader = ResponseReader(1 << 20)
        reader.connection_made(FakeTransport())
        feed(reader, frame(b"last") + frame(b"cut off")[:5], 1000)
        reader.connection_lost(None)
        first = bytes(await reader.next_frame())
        with pytest.raises(ConnectionResetError):
            await reader.next_frame()
        return first

    assert asyncio.run(run()) == b"last"
