"""Batch framing without decoding records: the view the broker's log works with.

A log segment, a Produce payload and a Fetch payload are all a sequence of entries
that start with ``offset int64, length int32``. For magic 2 the entry is a
RecordBatch; for magic 0/1 it is one legacy message (possibly a compressed wrapper).
This module reads just the headers, so the broker can index, validate and patch
batches while keeping them as bytes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from kafkalite.errors import CorruptRecordError

LOG_OVERHEAD = 12
"""Bytes of the ``offset int64, length int32`` prefix every entry starts with."""

V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_HEADER_SIZE = V2_HEADER.size  # 61
# Where each field of a v2 batch header starts, from the batch's first byte; every module
# that reads or patches a header in place uses these.
V2_LENGTH_POSITION = 8
V2_MAGIC_POSITION = 16
"""Same place in every format: offset(8) size(4) crc-or-epoch(4)."""
V2_CRC_POSITION = 17
V2_ATTRIBUTES_POSITION = 21
V2_BASE_TIMESTAMP_POSITION = 27
V2_CRC_START = V2_ATTRIBUTES_POSITION
"""The v2 CRC-32C covers bytes from ``attributes`` to the end of the batch."""

LEGACY_HEADER = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
LEGACY_TIMESTAMP = struct.Struct(">q")
LEGACY_MIN_SIZE = {0: 14, 1: 22}
"""Smallest legacy message (after the 12-byte prefix) per magic: null key and value."""

_PATCH_V2 = struct.Struct(">q")
_PATCH_EPOCH = struct.Struct(">i")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """Where one batch (or legacy message) sits and what its header says.

    ``base_offset`` is exact for v2 batches and uncompressed legacy messages. A legacy
    compressed wrapper only records its last inner offset, so its ``base_offset``
    equals ``last_offset`` until the wrapper is decompressed.
    """

    position: int
    size: int
    base_offset: int
    last_offset: int
    magic: int
    attributes: int
    crc: int
    max_timestamp: int
    partition_leader_epoch: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    record_count: int = 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_BIT else 0

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_BIT)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def read_batch_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader | None:
    """Read the entry header at ``pos``; ``None`` if fewer bytes remain than it needs.

    A header whose length or magic cannot be right raises :class:`CorruptRecordError`.
    """
    remaining = len(buf) - pos
    if remaining < LEGACY_HEADER.size:  # the smallest header any magic needs
        return None
    magic = buf[pos + V2_MAGIC_POSITION]
    if magic == 2:
        if remaining < V2_HEADER_SIZE:
            return None
        (base, length, epoch, _magic, crc, attrs, last_delta, _base_ts, max_ts, pid, pepoch,
         seq, count) = V2_HEADER.unpack_from(buf, pos)
        if length < V2_HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(f"record batch length {length} is below the v2 minimum", base)
        if last_delta < 0 or count < 0:
            raise CorruptRecordError("record batch has a negative record count", base)
        return BatchHeader(pos, length + LOG_OVERHEAD, base, base + last_delta, 2, attrs, crc,
                           max_ts, epoch, pid, pepoch, seq, count)
    if magic in (0, 1):
        offset, length, crc, _magic, attrs = LEGACY_HEADER.unpack_from(buf, pos)
        if length < LEGACY_MIN_SIZE[magic]:
            raise CorruptRecordError(f"legacy message length {length} is below the magic "
                                     f"{magic} minimum", offset)
        timestamp = -1
        if magic == 1:
            if remaining < LOG_OVERHEAD + 14:
                return None
            (timestamp,) = LEGACY_TIMESTAMP.unpack_from(buf, pos + 18)
        return BatchHeader(pos, length + LOG_OVERHEAD, offset, offset, magic, attrs, crc, timestamp)
    offset = int.from_bytes(bytes(buf[pos:pos + 8]), "big", signed=True)
    raise CorruptRecordError(f"unknown record magic {magic}", offset)


def iter_batch_headers(buf: bytes | bytearray | memoryview,
                       start: int = 0) -> Iterator[BatchHeader]:
    """Yield every complete entry's header; a truncated trailing entry ends the walk."""
    pos = start
    end = len(buf)
    while pos < end:
        header = read_batch_header(buf, pos)
        if header is None or pos + header.size > end:
            return
        yield header
        pos += header.size


def batch_crc_is_valid(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    """Check the stored CRC: CRC-32C for magic 2, CRC-32 (zlib) for magic 0/1."""
    start = header.position
    stop = start + header.size
    view = memoryview(buf)
    if header.magic == 2:
        return crc32c.crc32c(view[start + V2_CRC_START:stop]) == header.crc
    return zlib.crc32(view[start + 16:stop]) == header.crc


def patch_v2_batch(buf: bytearray | memoryview, pos: int, base_offset: int,
                   partition_leader_epoch: int) -> None:
    """Stamp a v2 batch with its log offset and leader epoch; neither is under the CRC."""
    _PATCH_V2.pack_into(buf, pos, base_offset)
    _PATCH_EPOCH.pack_into(buf, pos + 12, partition_leader_epoch)
