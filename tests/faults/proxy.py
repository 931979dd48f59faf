"""A loopback TCP proxy that the test owns: every link between brokers, and between each
broker and ZooKeeper, runs through it, so a test can cut, delay or reset any one link.

One listening port stands in front of each target (a broker's inter-broker listener, or
ZooKeeper for one broker). A link is a directed pair ``(source, target)`` of node names,
e.g. ``("b1", "b2")`` or ``("b3", "zk")``. For ZooKeeper ports the source is fixed (one
port per broker); for broker ports the source is read from the ``client_id`` of the first
Kafka request on the connection (the broker's replica fetchers, controller channel and
controlled-shutdown requests name their broker: ``replica-fetcher-2``, ``controller-1``,
``broker-3``). Anything else is a client and is never faulted.

Faults, per link:
- **cut**: the link behaves like a network partition: nothing crosses in either direction
  on existing or new connections (bytes wait in the proxy and the kernel, as they would in
  retransmission queues) until the link is healed; the endpoints only notice through their
  own timeouts.
- **delay**: every chunk waits this long before it is forwarded.
- **reset**: every open connection of the link is closed at once (a connection reset).

The event loop runs in a daemon thread; the control methods are thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

Link = tuple[str, str]
CLIENT = "client"
"""Source name of connections that no broker opened (clients, tools)."""
_BROKER_CLIENT_ID = re.compile(r"^(?:replica-fetcher|controller|broker)-(\d+)$")
_CHUNK = 65536
_STOP_TIMEOUT_S = 10.0


def broker_source(client_id: str | None) -> str:
    """The node name (``b<id>``) a broker's own requests carry in ``client_id``, else
    :data:`CLIENT`."""
    match = _BROKER_CLIENT_ID.match(client_id or "")
    return f"b{match.group(1)}" if match else CLIENT


def request_client_id(frame: bytes) -> str | None:
    """``client_id`` of a Kafka request frame (size prefix included), None if the frame is
    too short or has none. Header: size, api_key, api_version, correlation_id, client_id."""
    if len(frame) < 14:
        return None
    (length,) = struct.unpack_from(">h", frame, 12)
    if length < 0 or len(frame) < 14 + length:
        return None
    return frame[14:14 + length].decode("utf-8", "replace")


@dataclass
class _LinkState:
    open: asyncio.Event
    delay_s: float = 0.0
    writers: set[asyncio.StreamWriter] = field(default_factory=set)


class LinkProxy:
    """Start with :meth:`start`, add ports with :meth:`listen`, stop with :meth:`stop`."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="link-proxy",
                                        daemon=True)
        self._links: dict[Link, _LinkState] = {}
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.seen: set[Link] = set()
        """Every link that carried a connection (lets tests check the wiring)."""

    def start(self) -> LinkProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_STOP_TIMEOUT_S)

    def listen(self, target_port: int, target: str,
               source: str | Callable[[str | None], str]) -> int:
        """A new loopback port forwarding to ``127.0.0.1:target_port``; ``source`` names the
        connecting node, or maps a first request's client_id to it. Returns the port."""
        return self._call(self._listen(target_port, target, source))

    # ------------------------------------------------------------------ faults

    def cut(self, links: Iterable[Link]) -> None:
        for link in links:
            self._loop.call_soon_threadsafe(self._state(link).open.clear)

    def heal(self, links: Iterable[Link] | None = None) -> None:
        """Reopen ``links`` (every link when None) and drop their delays."""
        def reopen() -> None:
            for link, state in self._links.items():
                if links is None or link in chosen:
                    state.open.set()
                    state.delay_s = 0.0
        chosen = set(links or ())
        self._call_soon(reopen)

    def delay(self, links: Iterable[Link], seconds: float) -> None:
        for link in links:
            state = self._state(link)
            self._call_soon(lambda s=state: setattr(s, "delay_s", seconds))

    def reset(self, links: Iterable[Link]) -> None:
        for link in links:
            state = self._state(link)
            self._call_soon(lambda s=state: [w.close() for w in list(s.writers)])

    def is_cut(self, link: Link) -> bool:
        return not self._state(link).open.is_set()

    # ------------------------------------------------------------------ internals

    def _call(self, coroutine: object) -> int:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)  # type: ignore[arg-type]
        return future.result(_STOP_TIMEOUT_S)

    def _call_soon(self, function: Callable[[], object]) -> None:
        done = threading.Event()

        def run() -> None:
            try:
                function()
            finally:
                done.set()
        self._loop.call_soon_threadsafe(run)
        done.wait(_STOP_TIMEOUT_S)

    def _state(self, link: Link) -> _LinkState:
        state = self._links.get(link)
        if state is None:
            opened = asyncio.Event()
            opened.set()
            state = self._links.setdefault(link, _LinkState(opened))
        return state

    async def _listen(self, target_port: int, target: str,
                      source: str | Callable[[str | None], str]) -> int:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._tasks.add(task)
            try:
                await self._serve(reader, writer, target_port, target, source)
            finally:
                self._tasks.discard(task)
        server = await asyncio.start_server(accepted, "127.0.0.1", 0, reuse_address=True)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     target_port: int, target: str,
                     source: str | Callable[[str | None], str]) -> None:
        first = b""
        try:
            if isinstance(source, str):
                name = source
            else:
                first = await _first_frame(reader)
                name = source(request_client_id(first))
            link = (name, target)
            self.seen.add(link)
            state = self._state(link)
            await state.open.wait()
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except (OSError, asyncio.IncompleteReadError):
            writer.close()
            return
        state.writers.update((writer, up_writer))
        try:
            if first:
                up_writer.write(first)
            await asyncio.gather(_pump(reader, up_writer, state),
                                 _pump(up_reader, writer, state), return_exceptions=True)
        finally:
            state.writers.difference_update((writer, up_writer))
            writer.close()
            up_writer.close()

    async def _shutdown(self) -> int:
        for server in self._servers:
            server.close()
        for state in self._links.values():
            state.open.set()
            for w in list(state.writers):
                w.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return 0


async def _first_frame(reader: asyncio.StreamReader) -> bytes:
    """The first size-prefixed frame (up to the client_id) read whole, to learn the source."""
    size = await reader.readexactly(4)
    (length,) = struct.unpack(">i", size)
    return size + await reader.readexactly(max(0, min(length, 1 << 20)))


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                state: _LinkState) -> None:
    """Copies one direction, waiting while the link is cut and sleeping its delay."""
    try:
        while True:
            data = await reader.read(_CHUNK)
            await state.open.wait()
            if not data:
                break
            if state.delay_s:
                await asyncio.sleep(state.delay_s)
            await state.open.wait()
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()
