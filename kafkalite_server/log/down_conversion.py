"""Down-conversion: v2 batches rewritten as legacy message sets for Fetch v0-3 clients.

Fetch v0-1 clients read only magic 0 and Fetch v2-3 clients at most magic 1, so, as Kafka
does, the broker rewrites every entry of a newer magic before sending it (the converted
bytes are built in memory: sendfile's zero copy is lost for such fetches only):

- each record keeps its offset, key and value; record headers have no legacy form and
  are dropped; magic 0 drops the timestamp, magic 1 keeps it and the batch's timestamp
  type (a LogAppendTime batch's records carry its max timestamp);
- a compressed batch becomes one wrapper message with the same codec (zstd, which
  legacy formats cannot carry, is sent uncompressed); inner offsets are relative for
  magic 1 and absolute for magic 0, the wrapper holding the last record's offset;
- control batches are left out: their clients know no transactions (read_uncommitted).

Entries already at or below the client's magic (legacy entries of older logs) are sent
as stored. Only complete entries are converted; a trailing partial one is dropped.

Memory (Kafka's lazy down-conversion, KIP-283, in spirit): the fetched range is read
and converted one entry at a time (one batch's records decoded at once, within the log's
:class:`~kafkalite_server.log.decompression_limit.DecompressionLimit`), and conversion
stops before the output passes its byte budget (the first entry always comes whole, as a
fetch's first batch does); the client fetches the rest next time. The budget is the
fetch's own share of ``max_bytes``, and the broker-wide :class:`DownConversionBudget`
(``fetch.max.bytes`` in all, across connections) bounds what converted responses hold
in memory together: a fetch that finds it spent gets no records and fetches again.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator

from kafkalite.records import compress
from kafkalite.records.batch_header import (
    TIMESTAMP_TYPE_BIT,
    V2_HEADER_SIZE,
    BatchHeader,
    read_batch_header,
)
from kafkalite.records.compression import NONE, ZSTD
from kafkalite.records.legacy_messages import encode_message
from kafkalite.records.reader import RecordBatchView
from kafkalite_server.log.file_region import FileRegion

_FIRST_V2_FETCH = 4
_FIRST_MAGIC_1_FETCH = 2


def fetch_magic(api_version: int) -> int | None:
    """The highest magic a Fetch of ``api_version`` reads; None when it reads v2."""
    if api_version >= _FIRST_V2_FETCH:
        return None
    return 1 if api_version >= _FIRST_MAGIC_1_FETCH else 0


class ConvertedRecords(bytearray):
    """Down-converted records; the bytes they hold are returned to the
    :class:`DownConversionBudget` when the response that carried them is gone."""


class DownConversionBudget:
    """Bytes of down-converted records all responses may hold at once (thread-safe: a
    grant is released by the garbage collector of whichever thread drops it)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    def grant(self, wanted: int) -> int:
        """Up to ``wanted`` bytes of what is left (0 when spent)."""
        with self._lock:
            granted = max(0, min(wanted, self.max_bytes - self._held))
            self._held += granted
            return granted

    def hold(self, records: ConvertedRecords, granted: int) -> ConvertedRecords:
        """Keep ``len(records)`` of the ``granted`` bytes until ``records`` is freed;
        give back the rest now (the first entry may exceed the grant: then more is held)."""
        self.release(granted - len(records))
        weakref.finalize(records, self.release, len(records))
        return records

    def release(self, size: int) -> None:
        with self._lock:
            self._held -= size


def down_convert(records: bytes | bytearray | FileRegion, magic: int, *, max_bytes: int,
                 max_decompressed: int) -> bytes | bytearray | FileRegion:
    """``records`` with every entry newer than ``magic`` rewritten (as they are if none
    is), converting one entry at a time and stopping before the output would pass
    ``max_bytes`` (the first entry always comes whole)."""
    out = ConvertedRecords()
    converted = False
    for position, header in _headers(records):
        entry = _read(records, position, header.size)
        if header.magic <= magic:
            piece = entry
        else:
            converted = True
            piece = b"" if header.is_control else _converted(
                RecordBatchView(entry, header), magic, max_decompressed)
        if out and len(out) + len(piece) > max_bytes:
            break
        out += piece
    if not converted and len(out) == len(records):
        return records  # legacy entries only: sent as stored
    return out


def _headers(records: bytes | bytearray | FileRegion) -> Iterator[tuple[int, BatchHeader]]:
    """(position in ``records``, header) of each complete entry, read a header at a time;
    the header is parsed from the entry's own bytes (its ``position`` is 0)."""
    position = 0
    while position < len(records):
        header = read_batch_header(_read(records, position, V2_HEADER_SIZE), 0)
        if header is None or position + header.size > len(records):
            return
        yield position, header
        position += header.size


def _read(records: bytes | bytearray | FileRegion, position: int, size: int) -> bytes:
    size = min(size, len(records) - position)
    if isinstance(records, FileRegion):
        return records.read_range(position, size)
    return bytes(records[position:position + size])


def _converted(entry: RecordBatchView, magic: int, max_decompressed: int) -> bytes:
    records = entry.records(max_bytes=max_decompressed)
    if not records:  # every record compacted away
        return b""
    timestamp_type = TIMESTAMP_TYPE_BIT if magic == 1 and entry.timestamp_type == 1 else 0
    codec = NONE if entry.compression == ZSTD else entry.compression
    if codec == NONE:
        return b"".join(encode_message(r.offset, magic, timestamp_type, r.timestamp, r.key,
                                       r.value) for r in records)
    first = records[0].offset if magic == 1 else 0
    inner = b"".join(encode_message(r.offset - first, magic, 0, r.timestamp, r.key, r.value)
                     for r in records)
    max_timestamp = max(r.timestamp for r in records)
    return encode_message(records[-1].offset, magic, codec | timestamp_type, max_timestamp,
                          None, compress(codec, inner, magic=magic))
