"""Building record batches for the producer: RecordBatch v2, or legacy message sets.

``BatchBuilder(magic=...)`` returns the builder for that format; both share one
interface (``append`` until it returns False, then ``build``). "Full" compares the
uncompressed size against ``batch_size``, and the first record always fits, so a
record larger than ``batch_size`` still travels, alone.

The v2 ``append`` is the producer's per-record hot path: it encodes each record into
one piece (with the compiled codec when it is built, see
:mod:`kafkalite.records.accelerator`) and ``build`` joins them once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import crc32c

from kafkalite.protocol.varint import encode_varint, varint_size
from kafkalite.records.accelerator import speedups
from kafkalite.records.batch_header import (
    LOG_OVERHEAD,
    TRANSACTIONAL_BIT,
    V2_CRC_START,
    V2_HEADER,
    V2_HEADER_SIZE,
)
from kafkalite.records.compression import NONE, Codec, codec_id, compress
from kafkalite.records.legacy_messages import NO_TIMESTAMP, encode_message
from kafkalite.records.record import Header

BytesLike = bytes | bytearray | memoryview
RecordTuple = tuple[BytesLike | None, BytesLike | None, int, Sequence[Header] | None]
"""``(key, value, timestamp_ms, headers)`` as :func:`encode_batch` takes them."""

DEFAULT_BATCH_SIZE = 16384
_CRC = struct.Struct(">I")
_CRC_POSITION = 17
_TABLE_SIZE = 1 << 14
_VARINTS = tuple(encode_varint(v) for v in range(-1, _TABLE_SIZE - 1))
"""Varint bytes of -1 .. 16382, at index value + 1."""
_ATTRIBUTES_AND_VARINTS = tuple(b"\x00" + varint for varint in _VARINTS)
"""A record's attributes byte (always 0) followed by its timestamp delta, same indexing."""
_TABLE_MAX = _TABLE_SIZE - 2
_NULL = b"\x01"  # varint -1
_NO_HEADERS = b"\x00"  # varint 0
_BYTES_TYPES = (bytes, bytearray, memoryview)
_V2_RECORD_OVERHEAD = 21  # length 5 + attributes 1 + timestamp delta 10 + offset delta 5


class BinaryColumn(Sequence[bytes | None]):
    """Keys or values laid out as Apache Arrow lays out a binary array, so a batch can
    be encoded from the buffers in place (no Python bytes per record).

    ``validity`` (a bitmap, None: no nulls), ``offsets`` (``offset_width`` 4 or 8 bytes,
    native order) and ``data`` are objects with the buffer protocol (pyarrow Buffers);
    the column is rows ``first .. first + length - 1`` of them. ``max_size`` is the
    largest value's size. Indexing gives a value as bytes (or None), for the code that
    needs single values: partitioners, size checks, the Python encoder.
    """

    __slots__ = ("_offsets", "buffers", "max_size")

    def __init__(self, validity: Any, offsets: Any, data: Any, first: int,
                 length: int, offset_width: int, max_size: int) -> None:
        self.buffers = (validity, offsets, data, first, length, offset_width)
        """The column as the compiled encoder takes it."""
        self.max_size = max_size
        self._offsets = memoryview(offsets).cast("B").cast("i" if offset_width == 4 else "q")

    @classmethod
    def nulls(cls, length: int) -> BinaryColumn:
        """``length`` nulls (the keys of unkeyed records)."""
        return cls(bytes((length + 7) // 8), bytes(4 * (length + 1)), b"", 0, length, 4, 0)

    def __len__(self) -> int:
        return self.buffers[4]

    def __getitem__(self, index: int) -> bytes | None:  # type: ignore[override]
        validity, _, data, first, length, _ = self.buffers
        if not 0 <= index < length:
            raise IndexError("BinaryColumn index out of range")
        at = first + index
        if validity is not None and not memoryview(validity)[at >> 3] >> (at & 7) & 1:
            return None
        return bytes(memoryview(data)[self._offsets[at]:self._offsets[at + 1]])


class BatchBuilder:
    """Accumulates records into one batch of the given magic; see the module docstring."""

    __slots__ = ("_max_timestamp", "_parts", "_size", "base_offset", "batch_size",
                 "compression", "magic", "record_count")

    def __new__(cls, magic: int = 2, *args: object, **kwargs: object) -> BatchBuilder:
        if cls is BatchBuilder:
            if magic == 2:
                cls = RecordBatchBuilder
            elif magic in (0, 1):
                cls = MessageSetBuilder
            else:
                raise ValueError(f"record magic must be 0, 1 or 2, not {magic}")
        return object.__new__(cls)

    def __init__(self, magic: int = 2, compression: Codec = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, *, base_offset: int = 0) -> None:
        self.magic = magic
        self.compression = codec_id(compression)
        self.batch_size = batch_size
        self.base_offset = base_offset
        self._parts: list[BytesLike] = []
        self._size = 0
        self.record_count = 0
        """Records appended so far (read-only for callers)."""
        self._max_timestamp = -1

    @property
    def size_in_bytes(self) -> int:
        """Uncompressed size of the batch so far, headers included."""
        return self._size

    def append(self, timestamp_ms: int, key: BytesLike | None, value: BytesLike | None,
               headers: Sequence[Header] | None = None) -> bool:
        """Add a record; False (and nothing added) when it would overflow ``batch_size``."""
        raise NotImplementedError

    def append_many(self, timestamps: Sequence[int], keys: Sequence[BytesLike | None],
                    values: Sequence[BytesLike | None],
                    headers: Sequence[Sequence[Header] | None] | None, start: int,
                    stop: int) -> int:
        """Append records ``start..stop-1`` of the parallel sequences until one does not
        fit; returns the index of the first record not appended (``stop`` when all fit).

        ``headers`` is None when no record has any. The same result as calling
        :meth:`append` per record; the v2 builder does it without a call per record.
        """
        append = self.append
        for index in range(start, stop):
            if not append(timestamps[index], keys[index], values[index],
                          None if headers is None else headers[index]):
                return index
        return stop

    def build(self) -> bytes:
        """The finished batch bytes (empty if no record was appended)."""
        raise NotImplementedError


class RecordBatchBuilder(BatchBuilder):
    """RecordBatch v2, compressed as one records section when a codec is set."""

    __slots__ = ("_base_timestamp", "base_sequence", "is_transactional",
                 "partition_leader_epoch", "producer_epoch", "producer_id")

    def __init__(self, magic: int = 2, compression: Codec = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, *, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1,
                 is_transactional: bool = False, base_offset: int = 0,
                 partition_leader_epoch: int = -1) -> None:
        super().__init__(magic, compression, batch_size, base_offset=base_offset)
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.partition_leader_epoch = partition_leader_epoch
        self._size = V2_HEADER_SIZE
        self._base_timestamp = 0

    def append(self, timestamp_ms: int, key: BytesLike | None, value: BytesLike | None,
               headers: Sequence[Header] | None = None) -> bool:
        count = self.record_count
        if count:
            delta = timestamp_ms - self._base_timestamp
        else:
            self._base_timestamp = timestamp_ms
            delta = 0
        record = _encode_record(delta, count, key, value, headers)
        if record is None:  # the compiled codec declined: the Python one decides
            record = encode_record_python(delta, count, key, value, headers)
        size = self._size + len(record)
        if size > self.batch_size and count:
            return False
        self._parts.append(record)
        self._size = size
        self.record_count = count + 1
        if timestamp_ms > self._max_timestamp:
            self._max_timestamp = timestamp_ms
        return True

    def append_many(self, timestamps: Sequence[int], keys: Sequence[BytesLike | None],
                    values: Sequence[BytesLike | None],
                    headers: Sequence[Sequence[Header] | None] | None, start: int,
                    stop: int) -> int:
        # :meth:`append`'s encoding with the per-call work (argument passing, attribute
        # loads and stores) hoisted out of the loop: the producer's bulk path. The
        # compiled codec encodes the whole run into one piece.
        if start >= stop:
            return stop
        count = self.record_count
        if not count:
            self._base_timestamp = timestamps[start]
        base_timestamp = self._base_timestamp
        if _encode_arrow_records is not None and isinstance(values, BinaryColumn) \
                and headers is None:
            encoded = _encode_arrow_records(
                timestamps, keys.buffers if isinstance(keys, BinaryColumn) else (),
                values.buffers, start, stop, base_timestamp, count, self._size,
                self.batch_size, self._max_timestamp)
        elif _encode_records is not None:
            encoded = _encode_records(timestamps, keys, values, headers, start, stop,
                                      base_timestamp, count, self._size, self.batch_size,
                                      self._max_timestamp)
        else:
            encoded = None
        if encoded is not None:
            records, index, self._size, self.record_count, self._max_timestamp = encoded
            if records:
                self._parts.append(records)
            return index
        batch_size = self.batch_size
        size = self._size
        max_timestamp = self._max_timestamp
        parts: list[BytesLike] = []
        add = parts.append
        encode = encode_record_python
        index = start
        for index in range(start, stop):
            timestamp = timestamps[index]
            record = encode(timestamp - base_timestamp, count, keys[index], values[index],
                            None if headers is None else headers[index])
            new_size = size + len(record)
            if new_size > batch_size and count:
                break
            add(record)
            size = new_size
            count += 1
            if timestamp > max_timestamp:
                max_timestamp = timestamp
        else:
            index = stop
        self._parts += parts
        self._size = size
        self.record_count = count
        self._max_timestamp = max_timestamp
        return index

    def build(self) -> bytes:
        count = self.record_count
        if not count:
            return b""
        records = b"".join(self._parts)
        if self.compression != NONE:
            records = compress(self.compression, records)
        attributes = self.compression | (TRANSACTIONAL_BIT if self.is_transactional else 0)
        header = bytearray(V2_HEADER.pack(
            self.base_offset, V2_HEADER_SIZE - LOG_OVERHEAD + len(records),
            self.partition_leader_epoch, 2, 0, attributes, count - 1, self._base_timestamp,
            self._max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence,
            count))
        crc = crc32c.crc32c(records, crc32c.crc32c(memoryview(header)[V2_CRC_START:]))
        _CRC.pack_into(header, _CRC_POSITION, crc)
        return b"".join((header, records))


def encode_record_python(timestamp_delta: int, offset_delta: int, key: BytesLike | None,
                         value: BytesLike | None, headers: Sequence[Header] | None,
                         varints: tuple[bytes, ...] = _VARINTS,
                         with_attributes: tuple[bytes, ...] = _ATTRIBUTES_AND_VARINTS,
                         table_max: int = _TABLE_MAX) -> bytes:
    """One v2 record, length prefix included: the reference encoder (small varints come
    from lookup tables). The compiled codec's ``encode_record`` returns the same bytes."""
    delta = timestamp_delta
    head = (with_attributes[delta + 1] if -1 <= delta <= table_max
            else b"\x00" + encode_varint(delta))
    offset_part = (varints[offset_delta + 1] if offset_delta <= table_max
                   else encode_varint(offset_delta))
    if key is None:
        key_part, key = _NULL, b""
    elif key.__class__ is bytes or isinstance(key, _BYTES_TYPES):
        size = len(key)
        key_part = varints[size + 1] if size <= table_max else encode_varint(size)
    else:
        raise TypeError(f"record key must be bytes-like or None, not {type(key).__name__}")
    if value is None:
        value_part, value = _NULL, b""
    elif value.__class__ is bytes or isinstance(value, _BYTES_TYPES):
        size = len(value)
        value_part = varints[size + 1] if size <= table_max else encode_varint(size)
    else:
        raise TypeError(f"record value must be bytes-like or None, not "
                        f"{type(value).__name__}")
    header_part = _encode_headers(headers) if headers else _NO_HEADERS
    body = b"".join((head, offset_part, key_part, key, value_part, value, header_part))
    size = len(body)
    return (varints[size + 1] if size <= table_max else encode_varint(size)) + body


if speedups is not None:
    _encode_record = speedups.encode_record
    _encode_records = speedups.encode_records
else:
    _encode_record = encode_record_python
    _encode_records = None
_encode_arrow_records = getattr(speedups, "encode_arrow_records", None)


def _encode_headers(headers: Sequence[Header]) -> bytes:
    parts = [encode_varint(len(headers))]
    for name, value in headers:
        encoded = name.encode()
        parts += (encode_varint(len(encoded)), encoded)
        if value is None:
            parts.append(_NULL)
        else:
            parts += (encode_varint(len(value)), value)
    return b"".join(parts)


class MessageSetBuilder(BatchBuilder):
    """Legacy magic 0/1: a plain message set, or ONE compressed wrapper message.

    Wrapped inner offsets are relative (0..n-1) for magic 1 and absolute for magic 0;
    the wrapper carries the last inner offset and, for magic 1, the max timestamp.
    """

    __slots__ = ("_relative",)

    def __init__(self, magic: int = 1, compression: Codec = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, *, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1,
                 is_transactional: bool = False, base_offset: int = 0,
                 partition_leader_epoch: int = -1) -> None:
        # The producer passes its state to every builder; only magic 2 can carry it.
        if producer_id != -1 or is_transactional:
            raise ValueError(f"idempotent and transactional batches need magic 2, "
                             f"not magic {magic}")
        super().__init__(magic, compression, batch_size, base_offset=base_offset)
        compress(self.compression, b"", magic=magic)  # reject zstd for magic 0/1 up front
        self._relative = self.compression != NONE and magic == 1

    def append(self, timestamp_ms: int, key: BytesLike | None, value: BytesLike | None,
               headers: Sequence[Header] | None = None) -> bool:
        if headers:
            raise ValueError(f"record headers need magic 2; magic {self.magic} has none")
        for name, field in (("key", key), ("value", value)):
            if field is not None and not isinstance(field, _BYTES_TYPES):
                raise TypeError(f"record {name} must be bytes-like or None, not "
                                f"{type(field).__name__}")
        offset = self.record_count if self._relative else self.base_offset + self.record_count
        timestamp = timestamp_ms if self.magic else NO_TIMESTAMP
        message = encode_message(offset, self.magic, 0, timestamp, key, value)
        if self._size + len(message) > self.batch_size and self.record_count:
            return False
        self._parts.append(message)
        self._size += len(message)
        self.record_count += 1
        self._max_timestamp = max(self._max_timestamp, timestamp)
        return True

    def build(self) -> bytes:
        if not self.record_count:
            return b""
        inner = b"".join(self._parts)
        if self.compression == NONE:
            return inner
        value = compress(self.compression, inner, magic=self.magic)
        return encode_message(self.base_offset + self.record_count - 1, self.magic, self.compression,
                              self._max_timestamp, None, value)


def estimate_record_size(key: BytesLike | None, value: BytesLike | None,
                         headers: Sequence[Header] | None = None, *, magic: int = 2) -> int:
    """Upper bound of the bytes one record adds to a batch (a record alone: plus header).

    Lets a producer reject a record above ``max_request_size`` before batching it.
    """
    key_size = 0 if key is None else len(key)
    value_size = 0 if value is None else len(value)
    if magic < 2:
        return LOG_OVERHEAD + (22 if magic else 14) + key_size + value_size
    body = (_V2_RECORD_OVERHEAD + varint_size(key_size) + key_size + varint_size(value_size)
            + value_size)
    return V2_HEADER_SIZE + body + (len(_encode_headers(headers)) if headers else 1)


def encode_batch(records: Iterable[RecordTuple], *, magic: int = 2, compression: Codec = None,
                 base_offset: int = 0) -> bytes:
    """Encode ``(key, value, timestamp_ms, headers)`` tuples as one batch (no size limit)."""
    builder = BatchBuilder(magic, compression, 1 << 62, base_offset=base_offset)
    for key, value, timestamp_ms, headers in records:
        builder.append(timestamp_ms, key, value, headers)
    return builder.build()
