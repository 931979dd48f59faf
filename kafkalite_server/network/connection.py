"""One client connection: frames in, responses out, strictly one request at a time.

Handling one request at a time (awaiting delayed ones) is how Kafka mutes a channel: the
responses leave in request order however long each takes. Record chunks (file regions)
above ``SENDFILE_MIN_BYTES`` go out with ``loop.sendfile`` (zero copy); everything else
is joined into one ``transport.write``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from kafkalite.protocol import FrameDecoder, FrameTooLargeError
from kafkalite_server.network.dispatch import Disconnect, dispatch

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

_READ_SIZE = 256 * 1024
SENDFILE_MIN_BYTES = 64 * 1024
"""Smaller record regions are read with one ``pread`` and sent with the response bytes:
below this size the syscalls and bookkeeping of ``loop.sendfile`` cost more than the copy."""


async def serve_connection(broker: Broker, reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
    peername = writer.get_extra_info("peername")
    peer = f"{peername[0]}:{peername[1]}" if peername else "?"
    decoder = FrameDecoder(broker.config.socket_request_max_bytes)
    try:
        while True:
            data = await reader.read(_READ_SIZE)
            if not data:
                return
            try:
                frames = decoder.feed(data)
            except FrameTooLargeError as exc:
                log.warning("closing connection from %s: %s", peer, exc)
                return
            for frame in frames:
                chunks = await dispatch(broker, frame, peer)
                if chunks is not None:
                    await write_chunks(writer, chunks)
    except Disconnect:
        return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    except Exception:
        log.exception("closing connection from %s after an unexpected error", peer)
    finally:
        writer.close()


async def write_chunks(writer: asyncio.StreamWriter, chunks: list[Any]) -> None:
    """Bytes and small regions leave in one write; large regions go zero-copy."""
    transport = writer.transport
    pending: list[bytes | bytearray | memoryview] = []
    for chunk in chunks:
        if isinstance(chunk, bytes | bytearray | memoryview):
            pending.append(chunk)
        elif len(chunk) <= SENDFILE_MIN_BYTES:
            pending.append(chunk.read_bytes())
        else:
            if pending:
                transport.write(b"".join(pending))
                pending = []
            await writer.drain()
            await _send_region(transport, chunk)
    if pending:
        transport.write(b"".join(pending))
    await writer.drain()


async def _send_region(transport: asyncio.WriteTransport, region: Any) -> None:
    """Zero-copy when the transport allows; otherwise the bytes via ``pread``. (asyncio's
    own fallback seeks the shared file object, which would race between connections.)"""
    loop = asyncio.get_running_loop()
    try:
        await loop.sendfile(transport, region.file, region.position, region.length,
                            fallback=False)
    except (RuntimeError, NotImplementedError, asyncio.SendfileNotAvailableError):
        if transport.is_closing():
            raise ConnectionResetError("connection closed during sendfile") from None
        transport.write(region.read_bytes())
