"""Sans-IO splitting of a byte stream into size-prefixed Kafka frames."""

from __future__ import annotations

import struct

from kafkalite.errors import ProtocolDecodeError

_SIZE = struct.Struct(">i")


class FrameTooLargeError(ProtocolDecodeError):
    """A frame declares a size above the limit (or a negative size)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame size {size} is outside the allowed 0..{limit} bytes")
        self.size = size
        self.limit = limit


class FrameDecoder:
    """Feed it bytes as they arrive; get back each complete frame without its 4-byte size.

    Frames are ``bytearray`` so the broker can patch record batches in place. The size is
    checked before buffering the body, so a hostile size never causes a huge allocation.
    """

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buffer)

    @property
    def next_frame_size(self) -> int | None:
        """The declared size of the frame being received, once its size prefix is in."""
        if len(self._buffer) < 4:
            return None
        size: int = _SIZE.unpack_from(self._buffer)[0]
        return size

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytearray]:
        buf = self._buffer
        buf += data
        frames: list[bytearray] = []
        pos = 0
        available = len(buf)
        while available - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self.max_frame_bytes:
                raise FrameTooLargeError(size, self.max_frame_bytes)
            end = pos + 4 + size
            if end > available:
                break
            frames.append(buf[pos + 4 : end])
            pos = end
        if pos:
            del buf[:pos]
        return frames
