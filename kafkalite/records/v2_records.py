"""Decoding the records section of a RecordBatch v2: the consumer's per-record hot path.

Every record field is a zig-zag varint. Nearly all of them take one or two bytes, so
the loop decodes those inline from lookup tables and calls the shared decoder only for
longer ones; a function call per field would cost more than the rest of the record.
The loop trusts nothing: a record must end exactly where its length says, and any
read past the data surfaces as :class:`CorruptRecordError`.

When the compiled codec is built (:mod:`kafkalite.records.accelerator`) it decodes the
batch first; this loop runs only where it declines, malformed batches among them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kafkalite.errors import CorruptRecordError, ProtocolDecodeError
from kafkalite.protocol.varint import decode_varint
from kafkalite.records.accelerator import speedups
from kafkalite.records.record import NO_HEADERS, Header

_ONE_BYTE = tuple((raw >> 1) ^ -(raw & 1) for raw in range(0x80))
"""Zig-zag value of a one-byte varint, by byte."""
_TWO_BYTES = (0,) * 0x80 + tuple((raw >> 1) ^ -(raw & 1) for raw in range(0x4000))
"""Zig-zag value of a two-byte varint ``b0 b1``, at index ``b0 + (b1 << 7)``.

That index is the 14 payload bits plus 0x80 (``b0`` has its continuation bit set), so
the table starts with 0x80 unused entries and the lookup needs no masking.
"""


class Columns(NamedTuple):
    """The records of one batch as parallel lists, one entry per record.

    Column form is what both consumers of decoding want cheaply: the consumer builds its
    records with one comprehension, and Arrow arrays are built from the lists directly.
    """

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[Header, ...]]

    def __len__(self) -> int:
        return len(self.offsets)

    def slice(self, start: int, stop: int | None = None) -> Columns:
        """Records ``start..stop-1``."""
        return Columns(*[column[start:stop] for column in self])  # type: ignore[arg-type]


class RecordSection(NamedTuple):
    """A v2 batch's records section, decompressed: what the decoders take.

    ``fixed_timestamp`` is every record's timestamp when the batch uses LogAppendTime
    (the batch's max timestamp), else None.
    """

    data: bytes
    pos: int
    end: int
    record_count: int
    base_offset: int
    base_timestamp: int
    fixed_timestamp: int | None


class SectionRange(NamedTuple):
    """Records ``start..stop-1`` of a section whose records are plain (see
    :func:`is_plain`): decoded only when taken, into Python columns or Arrow buffers."""

    section: RecordSection
    start: int
    stop: int

    def columns(self) -> Columns:
        columns = decode_section(self.section)
        if self.start or self.stop < len(columns):
            columns = columns.slice(self.start, self.stop)
        return columns


_compiled_decode = speedups.decode_records if speedups is not None else None
_compiled_is_plain = getattr(speedups, "is_plain_section", None)
_new = tuple.__new__


def decode_section(section: RecordSection) -> Columns:
    """Every record of ``section``, timestamps fixed under LogAppendTime."""
    data, pos, end, count, base_offset, base_timestamp, fixed_timestamp = section
    columns = decode_columns(data, pos, end, count, base_offset, base_timestamp)
    if fixed_timestamp is not None:
        columns.timestamps[:] = [fixed_timestamp] * len(columns.timestamps)
    return columns


def is_plain(section: RecordSection) -> bool:
    """True when the compiled codec is built and vouches for the whole section: every
    record well formed, record ``i`` at ``base_offset + i``, no headers. Such a section
    can wait to be decoded, and its offsets are known without decoding it."""
    return _compiled_is_plain is not None and _compiled_is_plain(section)


def decode_columns(data: bytes, pos: int, end: int, count: int, base_offset: int,
                   base_timestamp: int) -> Columns:
    """Decode ``count`` records from ``data[pos:end]``, which they must fill exactly."""
    if _compiled_decode is not None:
        decoded = _compiled_decode(data, pos, end, count, base_offset, base_timestamp)
        if decoded is not None:
            return _new(Columns, decoded)
    return decode_columns_python(data, pos, end, count, base_offset, base_timestamp)


def decode_columns_python(data: bytes, pos: int, end: int, count: int, base_offset: int,
                          base_timestamp: int) -> Columns:
    """:func:`decode_columns` without the compiled codec: the reference."""
    try:
        return _decode(data, pos, end, count, base_offset, base_timestamp)
    except (IndexError, ProtocolDecodeError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(f"record batch structure is invalid: {exc}",
                                 base_offset) from exc


def _decode(data: bytes, pos: int, end: int, count: int, base_offset: int,
            base_timestamp: int,
            one: tuple[int, ...] = _ONE_BYTE, two: tuple[int, ...] = _TWO_BYTES,
            slow: Callable[[bytes, int], tuple[int, int]] = decode_varint,
            no_headers: tuple[Header, ...] = NO_HEADERS) -> Columns:
    # Each field below repeats one pattern: one byte (< 0x80), two bytes, or the general
    # decoder. It is written out because Python has no cheap inlining.
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    header_lists: list[tuple[Header, ...]] = []
    add_offset, add_timestamp = offsets.append, timestamps.append
    add_key, add_value, add_headers = keys.append, values.append, header_lists.append
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = one[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            length = two[b + (c << 7)]
            pos += 2
        else:
            length, pos = slow(data, pos)
        record_end = pos + length
        pos += 1  # attributes: unused

        b = data[pos]
        if b < 0x80:
            timestamp_delta = one[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            timestamp_delta = two[b + (c << 7)]
            pos += 2
        else:
            timestamp_delta, pos = slow(data, pos)

        b = data[pos]
        if b < 0x80:
            offset_delta = one[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            offset_delta = two[b + (c << 7)]
            pos += 2
        else:
            offset_delta, pos = slow(data, pos)

        b = data[pos]
        if b < 0x80:
            size = one[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            size = two[b + (c << 7)]
            pos += 2
        else:
            size, pos = slow(data, pos)
        if size >= 0:
            key: bytes | None = data[pos:pos + size]
            pos += size
        elif size == -1:
            key = None
        else:
            raise CorruptRecordError(f"record key length {size} is negative",
                                     base_offset + offset_delta)

        b = data[pos]
        if b < 0x80:
            size = one[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            size = two[b + (c << 7)]
            pos += 2
        else:
            size, pos = slow(data, pos)
        if size >= 0:
            value: bytes | None = data[pos:pos + size]
            pos += size
        elif size == -1:
            value = None
        else:
            raise CorruptRecordError(f"record value length {size} is negative",
                                     base_offset + offset_delta)

        if data[pos] == 0:
            headers = no_headers
            pos += 1
        else:
            headers, pos = _decode_headers(data, pos, base_offset + offset_delta)

        if pos != record_end:
            raise CorruptRecordError(f"record length {length} does not match its fields",
                                     base_offset + offset_delta)
        add_offset(base_offset + offset_delta)
        add_timestamp(base_timestamp + timestamp_delta)
        add_key(key)
        add_value(value)
        add_headers(headers)
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes left after the batch's {count} records"
                                 if pos < end else "records overrun the batch", base_offset)
    return Columns(offsets, timestamps, keys, values, header_lists)


def _decode_headers(data: bytes, pos: int, offset: int) -> tuple[tuple[Header, ...], int]:
    count, pos = decode_varint(data, pos)
    if count < 0:
        raise CorruptRecordError(f"record header count {count} is negative", offset)
    headers = []
    for _ in range(count):
        size, pos = decode_varint(data, pos)
        if size < 0 or pos + size > len(data):
            raise CorruptRecordError(f"record header key length {size} is invalid", offset)
        name = data[pos:pos + size].decode(errors="replace")  # as Java's String(bytes, UTF_8)
        pos += size
        size, pos = decode_varint(data, pos)
        if size >= 0:
            if pos + size > len(data):
                raise CorruptRecordError("record header value overruns the batch", offset)
            header_value: bytes | None = data[pos:pos + size]
            pos += size
        elif size == -1:
            header_value = None
        else:
            raise CorruptRecordError(f"record header value length {size} is negative", offset)
        headers.append((name, header_value))
    return tuple(headers), pos
