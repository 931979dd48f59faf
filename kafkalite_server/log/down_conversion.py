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
"""

from __future__ import annotations

from kafkalite.records import compress, iter_batches
from kafkalite.records.batch_header import TIMESTAMP_TYPE_BIT
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


def down_convert(records: bytes | FileRegion, magic: int) -> bytes | FileRegion:
    """``records`` with every entry newer than ``magic`` rewritten (unchanged if none is)."""
    data = records.read_bytes() if isinstance(records, FileRegion) else bytes(records)
    entries = list(iter_batches(data))
    if all(entry.magic <= magic for entry in entries):
        return records
    parts = []
    for entry in entries:
        if entry.magic <= magic:
            parts.append(data[entry.header.position:entry.header.position + entry.size])
        elif not entry.is_control:
            parts.append(_converted(entry, magic))
    return b"".join(parts)


def _converted(entry: RecordBatchView, magic: int) -> bytes:
    records = entry.records()
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
