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
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import crc32c

from kafkalite.protocol.varint import encode_varint, varint_size
from kafkalite.records.accelerator import speedups
from kafkalite.records.batch_header import (
    LOG_OVERHEAD,
    TRANSACTIONAL_BIT,
    V2_CRC_POSITION,
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

    __slots__ = ("base_offset", "compression", "magic")

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
        self.base_offset = base_offset
        self.batch_size = batch_size  # into the subclass's records store, made before

    @property
    def record_count(self) -> int:
        """Records appended so far."""
        raise NotImplementedError

    @property
    def size_in_bytes(self) -> int:
        """Uncompressed size of the batch so far, headers included."""
        raise NotImplementedError

    @property
    def batch_size(self) -> int:
        """The size past which a non-empty batch takes no more records (settable)."""
        raise NotImplementedError

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        raise NotImplementedError

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


class PythonRecordsWriter:
    """The records section of a v2 batch while it fills: the pure-Python twin of the
    compiled ``RecordsWriter`` (see :mod:`kafkalite.records.accelerator`), and its
    reference. ``size`` starts at the batch header's size; ``encode`` is the record
    encoder (:func:`encode_record_python`; the compiled writer calls it for what it
    declines). Both raise the same errors for a timestamp that is not an int or is out
    of range.

    :meth:`append_future` is the producer's per-record path: the record and its future
    in one call, the future built from what :meth:`bind_futures` set. Unlike the compiled
    one, these calls are not atomic under the GIL, so only the compiled writer's appends
    may run without the accumulator's lock (see :data:`ATOMIC_APPENDS`).
    """

    __slots__ = ("_encode", "_future", "_future_type", "_parts", "_tp", "base_timestamp",
                 "batch_size", "max_timestamp", "record_count", "sealed", "size_in_bytes")

    def __init__(self, batch_size: int, size: int,
                 encode: Callable[..., bytes]) -> None:
        self.batch_size = batch_size
        self.size_in_bytes = size
        self._encode = encode
        self._parts: list[bytes] = []
        self.record_count = 0
        self.base_timestamp = 0
        self.max_timestamp = -1
        self._future_type: type[tuple[Any, ...]] | None = None
        self._tp: object = None
        self._future: object = None
        self.sealed = False
        """True once :meth:`seal` was called."""

    def append(self, timestamp: int, key: BytesLike | None, value: BytesLike | None,
               headers: Sequence[Header] | None) -> bool:
        """Add a record; False (and nothing added) when it would take a non-empty batch
        past ``batch_size``, or once sealed."""
        if self.sealed:
            return False
        count = self.record_count
        base = self.base_timestamp if count else timestamp
        if timestamp.__class__ is not int or not _INT64_MIN <= timestamp <= _INT64_MAX \
                or not _INT64_MIN <= timestamp - base <= _INT64_MAX:
            _check_timestamp(timestamp, base)
            timestamp = int(timestamp)  # an int subclass (bool) is kept as its int, as in C
        record = self._encode(timestamp - base, count, key, value, headers)
        size = self.size_in_bytes + len(record)
        if size > self.batch_size and count:
            return False
        self._parts.append(record)
        self.size_in_bytes = size
        self.record_count = count + 1
        if not count:
            self.base_timestamp = timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        return True

    def bind_futures(self, future_type: type[tuple[Any, ...]], tp: object,
                     future: object) -> None:
        """What :meth:`append_future` builds futures from: a tuple subclass, and the first
        two items."""
        self._future_type, self._tp, self._future = future_type, tp, future

    def append_future(self, timestamp: int, key: BytesLike | None, value: BytesLike | None,
                      headers: Sequence[Header] | None) -> tuple[Any, ...] | None:
        """:meth:`append`, returning ``future_type(tp, future, offset delta, timestamp,
        key size, value size)`` (sizes -1 for None); None when the record does not fit or
        the writer is sealed."""
        if self._future_type is None:
            raise RuntimeError("append_future before bind_futures")
        count = self.record_count
        if not self.append(timestamp, key, value, headers):
            return None
        return tuple.__new__(self._future_type, (
            self._tp, self._future, count, timestamp, -1 if key is None else len(key),
            -1 if value is None else len(value)))

    def extend(self, records: bytes, base_timestamp: int, size: int, record_count: int,
               max_timestamp: int) -> None:
        """Add encoded records (what a bulk encoder returned for this writer's totals),
        taking the totals that came with them."""
        if self.sealed:
            raise ValueError("extend: the writer is sealed")
        if record_count < self.record_count or size < self.size_in_bytes:
            raise ValueError("extend: totals below the writer's own")
        self._parts.append(records)
        self.base_timestamp = base_timestamp
        self.size_in_bytes = size
        self.record_count = record_count
        self.max_timestamp = max_timestamp

    def seal(self) -> None:
        """Take no more records: appends decline (as when full) and :meth:`extend` fails."""
        self.sealed = True

    def getvalue(self) -> bytes:
        """The records section's bytes so far."""
        return b"".join(self._parts)


_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _check_timestamp(timestamp: object, base: object) -> None:
    """The writers' errors for a record timestamp (the compiled one words them the same)."""
    if not isinstance(timestamp, int):
        raise TypeError(f"record timestamp must be an int (ms), not {type(timestamp).__name__}")
    if not _INT64_MIN <= timestamp <= _INT64_MAX:
        raise ValueError(f"record timestamp {timestamp!r} does not fit 64 bits")
    assert isinstance(base, int)
    if not _INT64_MIN <= timestamp - base <= _INT64_MAX:
        raise ValueError(f"record timestamp {timestamp!r} is out of range for a batch "
                         f"starting at {base}")


class RecordBatchBuilder(BatchBuilder):
    """RecordBatch v2, compressed as one records section when a codec is set. The records
    section fills in a :data:`RecordsWriter` (the compiled one when it is built)."""

    __slots__ = ("base_sequence", "is_transactional", "partition_leader_epoch",
                 "producer_epoch", "producer_id", "writer")

    def __init__(self, magic: int = 2, compression: Codec = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, *, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1,
                 is_transactional: bool = False, base_offset: int = 0,
                 partition_leader_epoch: int = -1) -> None:
        self.writer: Any = RecordsWriter(batch_size, V2_HEADER_SIZE, encode_record_python)
        """The :data:`RecordsWriter` holding the records (the producer appends to it
        directly, with its futures)."""
        super().__init__(magic, compression, batch_size, base_offset=base_offset)
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.partition_leader_epoch = partition_leader_epoch

    @property
    def record_count(self) -> int:
        return self.writer.record_count

    @property
    def size_in_bytes(self) -> int:
        return self.writer.size_in_bytes

    @property
    def batch_size(self) -> int:
        return self.writer.batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self.writer.batch_size = value

    def append(self, timestamp_ms: int, key: BytesLike | None, value: BytesLike | None,
               headers: Sequence[Header] | None = None) -> bool:
        return self.writer.append(timestamp_ms, key, value, headers)

    def append_many(self, timestamps: Sequence[int], keys: Sequence[BytesLike | None],
                    values: Sequence[BytesLike | None],
                    headers: Sequence[Sequence[Header] | None] | None, start: int,
                    stop: int) -> int:
        # :meth:`append`'s encoding with the per-call work (argument passing, attribute
        # loads and stores) hoisted out of the loop: the producer's bulk path. The
        # compiled codec encodes the whole run into one piece.
        if start >= stop:
            return stop
        writer = self.writer
        count = writer.record_count
        base_timestamp = writer.base_timestamp if count else timestamps[start]
        size = writer.size_in_bytes
        batch_size = writer.batch_size
        max_timestamp = writer.max_timestamp
        if _encode_arrow_records is not None and isinstance(values, BinaryColumn) \
                and headers is None:
            encoded = _encode_arrow_records(
                timestamps, keys.buffers if isinstance(keys, BinaryColumn) else (),
                values.buffers, start, stop, base_timestamp, count, size, batch_size,
                max_timestamp)
        elif _encode_records is not None:
            encoded = _encode_records(timestamps, keys, values, headers, start, stop,
                                      base_timestamp, count, size, batch_size, max_timestamp)
        else:
            encoded = None
        if encoded is not None:
            records, index, size, count, max_timestamp = encoded
            if index > start:
                writer.extend(records, base_timestamp, size, count, max_timestamp)
            return index
        parts: list[bytes] = []
        add = parts.append
        encode = encode_record_python
        index = start
        for index in range(start, stop):
            timestamp = timestamps[index]
            if timestamp.__class__ is not int or not _INT64_MIN <= timestamp <= _INT64_MAX \
                    or not _INT64_MIN <= timestamp - base_timestamp <= _INT64_MAX:
                _check_timestamp(timestamp, base_timestamp)
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
        if parts:
            writer.extend(b"".join(parts), base_timestamp, size, count, max_timestamp)
        return index

    def build(self) -> bytes:
        """The batch's bytes; the writer is sealed first, so a record appended without
        the producer's lock is either in these bytes or declined, never dropped."""
        writer = self.writer
        writer.seal()
        count = writer.record_count
        if not count:
            return b""
        records = writer.getvalue()
        if self.compression != NONE:
            records = compress(self.compression, records)
        attributes = self.compression | (TRANSACTIONAL_BIT if self.is_transactional else 0)
        header = bytearray(V2_HEADER.pack(
            self.base_offset, V2_HEADER_SIZE - LOG_OVERHEAD + len(records),
            self.partition_leader_epoch, 2, 0, attributes, count - 1, writer.base_timestamp,
            writer.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence,
            count))
        crc = crc32c.crc32c(records, crc32c.crc32c(memoryview(header)[V2_CRC_START:]))
        _CRC.pack_into(header, V2_CRC_POSITION, crc)
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


RecordsWriter: Any = PythonRecordsWriter if speedups is None else speedups.RecordsWriter
"""The records writer v2 builders use: the compiled one when it is built."""
ATOMIC_APPENDS: bool = speedups is not None and getattr(sys, "_is_gil_enabled", lambda: True)()
"""True when a :data:`RecordsWriter`'s ``append_future`` and ``seal`` are each atomic:
single C calls that run no Python code before the record is in, under a GIL. Then a
writer can be appended to without a lock, as long as whoever reads it seals it first."""
_encode_records = None if speedups is None else speedups.encode_records
_encode_arrow_records = None if speedups is None else speedups.encode_arrow_records


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

    __slots__ = ("_batch_size", "_count", "_max_timestamp", "_parts", "_relative", "_size")

    def __init__(self, magic: int = 1, compression: Codec = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, *, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1,
                 is_transactional: bool = False, base_offset: int = 0,
                 partition_leader_epoch: int = -1) -> None:
        # The producer passes its state to every builder; only magic 2 can carry it.
        if producer_id != -1 or is_transactional:
            raise ValueError(f"idempotent and transactional batches need magic 2, "
                             f"not magic {magic}")
        self._parts: list[bytes] = []
        self._size = 0
        self._count = 0
        self._max_timestamp = -1
        super().__init__(magic, compression, batch_size, base_offset=base_offset)
        compress(self.compression, b"", magic=magic)  # reject zstd for magic 0/1 up front
        self._relative = self.compression != NONE and magic == 1

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def size_in_bytes(self) -> int:
        return self._size

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self._batch_size = value

    def append(self, timestamp_ms: int, key: BytesLike | None, value: BytesLike | None,
               headers: Sequence[Header] | None = None) -> bool:
        if headers:
            raise ValueError(f"record headers need magic 2; magic {self.magic} has none")
        for name, field in (("key", key), ("value", value)):
            if field is not None and not isinstance(field, _BYTES_TYPES):
                raise TypeError(f"record {name} must be bytes-like or None, not "
                                f"{type(field).__name__}")
        count = self._count
        offset = count if self._relative else self.base_offset + count
        timestamp = timestamp_ms if self.magic else NO_TIMESTAMP
        message = encode_message(offset, self.magic, 0, timestamp, key, value)
        if self._size + len(message) > self._batch_size and count:
            return False
        self._parts.append(message)
        self._size += len(message)
        self._count = count + 1
        self._max_timestamp = max(self._max_timestamp, timestamp)
        return True

    def build(self) -> bytes:
        if not self._count:
            return b""
        inner = b"".join(self._parts)
        if self.compression == NONE:
            return inner
        value = compress(self.compression, inner, magic=self.magic)
        return encode_message(self.base_offset + self._count - 1, self.magic, self.compression,
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
