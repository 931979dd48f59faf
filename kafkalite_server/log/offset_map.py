"""A fixed-size map from key hash to the key's last offset (Kafka's SkimpyOffsetMap).

The cleaner needs "the newest offset of every key in the dirty part of a log" in bounded
memory. Like Kafka, the map stores only a 16-byte MD5 digest of each key and an 8-byte
offset: 24 bytes a slot in one preallocated ``bytearray``, with open addressing and
linear probing, and no deletes. Two keys with the same digest would share a slot (a
2**-128 chance that Kafka accepts too).

The map is "full" at a load factor of 0.9 (``log.cleaner.io.buffer.load.factor``): past
it probing gets long, so the cleaner stops there and cleans the rest in a later pass.
"""

from __future__ import annotations

import hashlib
import struct

HASH_SIZE = 16
SLOT_SIZE = HASH_SIZE + 8
LOAD_FACTOR = 0.9
_OFFSET = struct.Struct(">q")
_EMPTY = bytes(HASH_SIZE)


class OffsetMap:
    """Key digest -> offset in ``memory_bytes`` of slots; see the module docstring."""

    def __init__(self, memory_bytes: int, load_factor: float = LOAD_FACTOR) -> None:
        self.slots = memory_bytes // SLOT_SIZE
        if self.slots < 1:
            raise ValueError(f"an offset map needs at least {SLOT_SIZE} bytes, "
                             f"not {memory_bytes}")
        self._max_entries = max(1, int(self.slots * load_factor))
        self._buffer = bytearray(self.slots * SLOT_SIZE)
        self.size = 0
        self.last_offset = -1
        """The highest offset put since the last :meth:`clear`."""

    @property
    def free_entries(self) -> int:
        """How many more distinct keys fit under the load factor."""
        return self._max_entries - self.size

    def clear(self) -> None:
        self._buffer[:] = bytes(len(self._buffer))
        self.size = 0
        self.last_offset = -1

    def _slot_of(self, digest: bytes) -> tuple[int, bool]:
        """(byte position of the digest's slot, whether it is already there)."""
        buffer = self._buffer
        slot = int.from_bytes(digest[:8], "big") % self.slots
        while True:
            position = slot * SLOT_SIZE
            stored = buffer[position:position + HASH_SIZE]
            if stored == digest:
                return position, True
            if stored == _EMPTY:
                return position, False
            slot += 1
            if slot == self.slots:
                slot = 0

    def put(self, key: bytes, offset: int) -> None:
        """Remember ``offset`` as ``key``'s newest; raises OverflowError when full."""
        digest = hashlib.md5(key, usedforsecurity=False).digest()
        position, present = self._slot_of(digest)
        if not present:
            if self.size >= self._max_entries:
                raise OverflowError("the offset map is full")
            self._buffer[position:position + HASH_SIZE] = digest
            self.size += 1
        _OFFSET.pack_into(self._buffer, position + HASH_SIZE, offset)
        if offset > self.last_offset:
            self.last_offset = offset

    def get(self, key: bytes) -> int:
        """``key``'s offset, or -1 when the map does not hold it."""
        digest = hashlib.md5(key, usedforsecurity=False).digest()
        position, present = self._slot_of(digest)
        if not present:
            return -1
        return _OFFSET.unpack_from(self._buffer, position + HASH_SIZE)[0]
