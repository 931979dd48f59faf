"""Reading record sets (Fetch responses, log segments): batches, then their records.

:func:`iter_batches` walks the entries of a record set without decoding records;
:func:`decode_batches` yields every record of every entry. Both accept v2 batches
and legacy messages mixed in one buffer, as a log that changed format holds them,
and both drop a truncated trailing entry, which a Fetch response cut at its size
limit ends with.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from itertools import repeat

from kafkalite.errors import CorruptRecordError
from kafkalite.records import legacy_messages, v2_records
from kafkalite.records.batch_header import (
    V2_BASE_TIMESTAMP_POSITION,
    V2_HEADER_SIZE,
    BatchHeader,
    batch_crc_is_valid,
    iter_batch_headers,
)
from kafkalite.records.compression import NONE, decompress
from kafkalite.records.record import LOG_APPEND_TIME, NO_TIMESTAMP_TYPE, Record
from kafkalite.records.v2_records import Columns, RecordSection

_BASE_TIMESTAMP = struct.Struct(">q")

Buffer = bytes | bytearray | memoryview


class RecordBatchView:
    """One entry of a record set: a v2 batch or a legacy (possibly wrapper) message.

    Header fields read without decoding anything; records decode on iteration. For a
    legacy wrapper, ``base_offset`` is the wrapper's offset (its last inner offset) and
    ``record_count`` is 1 until iterated, as the count is inside the compressed value.
    """

    __slots__ = ("data", "header")

    def __init__(self, data: bytes, header: BatchHeader) -> None:
        self.data = data
        self.header = header

    def __repr__(self) -> str:
        return (f"RecordBatchView(magic={self.magic}, base_offset={self.base_offset}, "
                f"last_offset={self.last_offset}, records={self.record_count}, "
                f"compression={self.compression}, control={self.is_control})")

    @property
    def magic(self) -> int:
        return self.header.magic

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def next_offset(self) -> int:
        return self.header.last_offset + 1

    @property
    def size(self) -> int:
        """Bytes the entry occupies, including the 12-byte offset and length prefix."""
        return self.header.size

    @property
    def record_count(self) -> int:
        return self.header.record_count

    @property
    def compression(self) -> int:
        return self.header.compression

    @property
    def timestamp_type(self) -> int:
        return NO_TIMESTAMP_TYPE if self.header.magic == 0 else self.header.timestamp_type

    @property
    def max_timestamp(self) -> int:
        return self.header.max_timestamp

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    @property
    def producer_id(self) -> int:
        return self.header.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.header.producer_epoch

    @property
    def base_sequence(self) -> int:
        return self.header.base_sequence

    @property
    def partition_leader_epoch(self) -> int:
        return self.header.partition_leader_epoch

    def crc_is_valid(self) -> bool:
        return batch_crc_is_valid(self.data, self.header)

    def ensure_valid(self) -> None:
        """Raise :class:`CorruptRecordError` naming the offset if the stored CRC is wrong."""
        if not self.crc_is_valid():
            kind = "record batch" if self.magic == 2 else "legacy message"
            raise CorruptRecordError(f"{kind} CRC mismatch", self.base_offset)

    def records(self, *, check_crcs: bool = False, max_bytes: int | None = None) -> list[Record]:
        """Decode every record (decompressing as needed); ``check_crcs`` covers inner messages.

        ``max_bytes`` bounds the decompressed size of a compressed entry
        (:class:`~kafkalite.errors.DecompressedSizeError` past it).
        """
        if self.header.magic != 2:
            return legacy_messages.decode_entry(self.data, self, check_crcs=check_crcs,
                                                max_bytes=max_bytes)
        offsets, timestamps, keys, values, headers = self.columns(max_bytes=max_bytes)
        return list(map(Record, offsets, timestamps, keys, values, headers, repeat(self)))

    def columns(self, *, check_crcs: bool = False, max_bytes: int | None = None) -> Columns:
        """The records as parallel lists (see :class:`~kafkalite.records.v2_records.Columns`);
        the same checks and bounds as :meth:`records`. Timestamps are the batch's for
        LogAppendTime."""
        if self.header.magic != 2:
            records = self.records(check_crcs=check_crcs, max_bytes=max_bytes)
            return Columns([r.offset for r in records], [r.timestamp for r in records],
                           [r.key for r in records], [r.value for r in records],
                           [r.headers for r in records])
        return v2_records.decode_section(self.section(max_bytes=max_bytes))

    def section(self, *, max_bytes: int | None = None) -> RecordSection:
        """A v2 batch's records section, decompressed (bounded by ``max_bytes``), not yet
        decoded."""
        header = self.header
        start = header.position + V2_HEADER_SIZE
        end = header.position + header.size
        (base_timestamp,) = _BASE_TIMESTAMP.unpack_from(
            self.data, header.position + V2_BASE_TIMESTAMP_POSITION)
        if header.compression == NONE:
            data, pos = self.data, start
        else:
            data = decompress(header.compression, memoryview(self.data)[start:end],
                              max_bytes=max_bytes)
            pos, end = 0, len(data)
        return RecordSection(data, pos, end, header.record_count, header.base_offset,
                             base_timestamp, header.max_timestamp
                             if header.timestamp_type == LOG_APPEND_TIME else None)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())


def iter_batches(data: Buffer) -> Iterator[RecordBatchView]:
    """Yield each complete entry of a record set; control batches too (``is_control``)."""
    buffer = data if isinstance(data, bytes) else bytes(data)
    for header in iter_batch_headers(buffer):
        yield RecordBatchView(buffer, header)


def decode_batches(data: Buffer, *, check_crcs: bool = True,
                   max_bytes: int | None = None) -> Iterator[Record]:
    """Yield every record of every entry, control records included (``record.batch``);
    ``max_bytes`` bounds each entry's decompressed size."""
    for batch in iter_batches(data):
        if check_crcs:
            batch.ensure_valid()
        yield from batch.records(check_crcs=check_crcs, max_bytes=max_bytes)
