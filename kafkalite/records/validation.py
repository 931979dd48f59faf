"""Checking every record of a RecordBatch v2 without building record objects.

What Kafka's broker checks before it appends a client's batch (its LogValidator), so a
batch that no reader could decode never reaches a log: each record's length, offset
delta, key, value and headers must lie inside the record, offset deltas must count
0, 1, 2, ..., the records must fill the records section exactly and match the header's
record count. A compressed section is decompressed with a bound (a small batch may
claim an enormous expansion) and walked the same way: up to :data:`STREAM_AFTER` bytes in
one buffer, and past that as it streams, so validating a batch of any size holds one
piece of it and at most one partial record, never the whole decompressed section.

The walk is the broker's per-record cost on every produce. When the compiled codec is
built (:mod:`kafkalite.records.accelerator`) it walks the records first and the Python
walk runs only where it declines, every invalid batch among them, so the errors are
always the Python walk's. The Python walk, the reference, reads one- and two-byte
varints inline from lookup tables like the consumer's decoder
(:mod:`kafkalite.records.v2_records`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kafkalite.errors import CorruptRecordError, ProtocolDecodeError
from kafkalite.protocol.varint import decode_varint
from kafkalite.records.accelerator import speedups
from kafkalite.records.batch_header import V2_HEADER_SIZE, BatchHeader
from kafkalite.records.compression import NONE, iter_decompress

_ONE_BYTE = tuple((raw >> 1) ^ -(raw & 1) for raw in range(0x80))
_TWO_BYTES = (0,) * 0x80 + tuple((raw >> 1) ^ -(raw & 1) for raw in range(0x4000))
_MIN_RECORD_BODY = 6
"""attributes, timestamp delta, offset delta, key length, value length, header count."""
STREAM_AFTER = 1024 * 1024
"""Decompressed bytes walked in one buffer (the compiled walk); a larger section is walked
record by record as it decompresses (the Python walk)."""
_MAX_VARINT_BYTES = 10


@dataclass(frozen=True, slots=True)
class RecordProblem:
    """One bad record: its index in the batch (0-based) and what is wrong with it."""

    index: int
    message: str


class InvalidRecordsError(CorruptRecordError):
    """Records that do not fit their batch, or break a rule of the topic.

    ``problems`` names each bad record by its index in the batch (what a Produce v8
    response reports as ``record_errors``); empty when the fault is the batch's as a
    whole (its record count, or bytes after the last record).
    """

    def __init__(self, message: str, problems: tuple[RecordProblem, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


def check_batch_records(buf: bytes | bytearray | memoryview, header: BatchHeader, *,
                        max_bytes: int, keys_required: bool = False) -> None:
    """Check the records of the v2 batch ``header`` describes within ``buf``.

    A compressed section may decompress to at most ``max_bytes``
    (:class:`~kafkalite.errors.DecompressedSizeError` otherwise). With ``keys_required``
    (a compacted topic) every record needs a key. Raises :class:`InvalidRecordsError`
    for records that do not decode or do not match the header, and
    :class:`CorruptRecordError` for a section that does not decompress.
    """
    start = header.position + V2_HEADER_SIZE
    end = header.position + header.size
    if header.compression == NONE:
        null_keys = check_records(buf, start, end, header.record_count)
    else:
        null_keys = _check_compressed(memoryview(buf)[start:end], header, max_bytes)
    if keys_required and null_keys:
        raise InvalidRecordsError(
            f"a compacted topic needs a key on every record; {len(null_keys)} have none",
            tuple(RecordProblem(i, "compacted topic cannot accept a record without a key")
                  for i in null_keys))


def _check_compressed(section: memoryview, header: BatchHeader, max_bytes: int) -> list[int]:
    """Decompress in pieces (never past ``max_bytes``); a section that stays within
    :data:`STREAM_AFTER` is walked whole, a larger one as the rest streams in."""
    pieces = iter_decompress(header.compression, section, max_bytes=max_bytes)
    head = bytearray()
    for piece in pieces:
        head += piece
        if len(head) > STREAM_AFTER:
            return _check_streamed(head, pieces, header.record_count)
    return check_records(head, 0, len(head), header.record_count)


def _check_streamed(buffer: bytearray, pieces: Iterator[bytes], count: int) -> list[int]:
    """Walk the complete records at the front of ``buffer``, drop them, take the next
    piece, repeat; the last piece's walk also checks the record count. ``buffer`` holds
    one piece plus at most one partial record at a time."""
    null_keys: list[int] = []
    index = 0
    while True:
        piece = next(pieces, None)
        if piece is None:
            return null_keys + check_records_python(buffer, 0, len(buffer), count,
                                                    first_index=index)
        end, complete = _complete_records(buffer)
        null_keys += check_records_python(buffer, 0, end, count, first_index=index,
                                          final=False)
        index += complete
        del buffer[:end]
        buffer += piece


def _complete_records(data: bytearray) -> tuple[int, int]:
    """(end, count) of the complete records at the front of ``data``, by their lengths
    alone. A length that cannot be valid ends the span at the end of ``data``, so the walk
    reports it."""
    pos = count = 0
    size = len(data)
    while pos < size:
        try:
            length, body = decode_varint(data, pos)
        except ProtocolDecodeError:
            if size - pos < _MAX_VARINT_BYTES:  # cut by the piece: wait for the next one
                break
            return size, count
        if length < _MIN_RECORD_BODY:
            return size, count
        if body + length > size:
            break
        pos = body + length
        count += 1
    return pos, count


_compiled_check = speedups.check_records if speedups is not None else None


def check_records(data: bytes | bytearray | memoryview, pos: int, end: int,
                  count: int) -> list[int]:
    """Walk ``count`` records in ``data[pos:end]``; return the indexes of null-key records.

    Raises :class:`InvalidRecordsError` naming the first record that does not decode.
    """
    if _compiled_check is not None:
        null_keys: list[int] | None = _compiled_check(data, pos, end, count)
        if null_keys is not None:
            return null_keys
    return check_records_python(data, pos, end, count)


def check_records_python(data: bytes | bytearray | memoryview, pos: int, end: int,
                         count: int, *, first_index: int = 0, final: bool = True) -> list[int]:
    """:func:`check_records` without the compiled codec: the reference. A streamed walk
    passes the index of the first record in ``data[pos:end]``, and ``final`` False for
    every span but the last (only the last checks the record count)."""
    try:
        return _walk(data, pos, end, count, first_index, final)
    except _BadRecord as exc:
        index, message = exc.args
        raise InvalidRecordsError(f"record {index}: {message}",
                                  (RecordProblem(index, message),)) from None
    except (IndexError, ProtocolDecodeError) as exc:
        raise InvalidRecordsError(f"records are truncated: {exc}") from None


class _BadRecord(Exception):
    """(index, message) of the record the walk stopped at."""


def _walk(data: bytes | bytearray | memoryview, pos: int, end: int, count: int,
          first_index: int = 0, final: bool = True,
          one: tuple[int, ...] = _ONE_BYTE, two: tuple[int, ...] = _TWO_BYTES,
          slow: Callable[[bytes | bytearray | memoryview, int], tuple[int, int]]
          = decode_varint) -> list[int]:
    # One pattern per varint field: one byte (< 0x80), two bytes, or the general decoder.
    # Written out because a function call per field would dominate the cost.
    null_keys: list[int] = []
    index = first_index
    while pos < end:
        if index == count:
            raise InvalidRecordsError(f"{end - pos} bytes follow the batch's {count} records")
        b = data[pos]
        if b < 0x80:
            length = one[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            length = two[b + (c << 7)]
            pos += 2
        elif (d := data[pos + 2]) < 0x80:  # 8 KiB .. 1 MiB: large values
            raw = (b & 0x7F) | (c & 0x7F) << 7 | d << 14
            length = (raw >> 1) ^ -(raw & 1)
            pos += 3
        else:
            length, pos = slow(data, pos)
        record_end = pos + length
        if length < _MIN_RECORD_BODY or record_end > end:
            raise _BadRecord(index, f"record length {length} does not fit the "
                                    f"{end - pos} bytes left in the batch")
        pos += 1  # attributes: unused, any value is accepted (as Kafka does)

        b = data[pos]  # timestamp delta: any varlong; only its bytes are skipped
        if b < 0x80:
            pos += 1
        elif data[pos + 1] < 0x80:
            pos += 2
        else:
            pos = slow(data, pos)[1]

        b = data[pos]
        if b < 0x80:
            offset_delta = one[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            offset_delta = two[b + (c << 7)]
            pos += 2
        else:
            offset_delta, pos = slow(data, pos)
        if offset_delta != index:
            raise _BadRecord(index, f"offset delta {offset_delta} where {index} belongs")

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
            pos += size
        elif size == -1:
            null_keys.append(index)
        else:
            raise _BadRecord(index, f"key length {size} is negative")
        if pos >= record_end:
            raise _BadRecord(index, f"key length {size} overruns the record")

        b = data[pos]
        if b < 0x80:
            size = one[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            size = two[b + (c << 7)]
            pos += 2
        elif (d := data[pos + 2]) < 0x80:
            raw = (b & 0x7F) | (c & 0x7F) << 7 | d << 14
            size = (raw >> 1) ^ -(raw & 1)
            pos += 3
        else:
            size, pos = slow(data, pos)
        if size >= 0:
            pos += size
        elif size != -1:
            raise _BadRecord(index, f"value length {size} is negative")
        if pos >= record_end:
            raise _BadRecord(index, f"value length {size} overruns the record")

        if data[pos] == 0:
            pos += 1
        else:
            pos = _skip_headers(data, pos, record_end, index)
        if pos != record_end:
            raise _BadRecord(index, f"record length {length} does not match its fields "
                                    f"({record_end - pos} bytes unread)"
                             if pos < record_end else f"record overruns its length {length}")
        index += 1
    if final and index != count:
        raise InvalidRecordsError(f"the batch header counts {count} records but it holds "
                                  f"{index}")
    return null_keys


def _skip_headers(data: bytes | bytearray | memoryview, pos: int, record_end: int,
                  index: int) -> int:
    count, pos = decode_varint(data, pos)
    if not 0 <= count <= record_end - pos:
        raise _BadRecord(index, f"header count {count} is invalid")
    for _ in range(count):
        size, pos = decode_varint(data, pos)
        if not 0 <= size <= record_end - pos:
            raise _BadRecord(index, f"header key length {size} is invalid")
        pos += size
        size, pos = decode_varint(data, pos)
        if size < -1 or size > record_end - pos:
            raise _BadRecord(index, f"header value length {size} is invalid")
        pos += max(size, 0)
    return pos

