"""Compaction of one stored batch: which records survive, and the batch rebuilt around them.

Pure functions over bytes, so the rules are testable without a log:

- A record is dropped when the offset map holds a newer offset for its key, or when it has
  no key (Kafka refuses keyless records on compacted topics and the cleaner drops any).
- A tombstone (null value) survives until its batch's *delete horizon* has passed. The
  horizon is stamped the first time the batch is rewritten by a cleaning (KIP-534): base
  timestamp := now + ``delete.retention.ms`` and attribute bit 0x40 set; record timestamp
  deltas are re-encoded so that every record keeps its timestamp.
- The rebuilt v2 batch keeps its base offset *and* last offset delta (so the producer's
  last sequence stays readable), producer id, epoch, base sequence, leader epoch,
  timestamp type and codec (records are recompressed with it). A batch left without
  records goes, unless it is its producer's last batch: that one stays as an empty batch
  (Kafka's RETAIN_EMPTY), so producer state survives compaction.
- Transactions (Kafka's rules, tracked by :class:`TransactionTracker`). Every record of an
  aborted transaction goes (the aborted-transaction index names them), and such records
  never enter the offset map, so an aborted value never wins over a committed one. A
  commit or abort marker stays while any batch of its transaction is still in the log;
  once none is, the marker is stamped with a delete horizon like a tombstone's and goes
  when the horizon has passed, so a slow read_committed reader still sees it.
- Legacy (magic 0/1) entries are kept or dropped whole: a compressed wrapper stays while
  any of its records is live, and legacy tombstones have no horizon to stamp, so they stay.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from dataclasses import dataclass, replace

import crc32c

from kafkalite.protocol.varint import decode_varint, encode_varint
from kafkalite.records.batch_header import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    V2_BASE_TIMESTAMP_POSITION,
    V2_CRC_POSITION,
    V2_CRC_START,
    V2_HEADER,
    V2_HEADER_SIZE,
    BatchHeader,
)
from kafkalite.records.compression import NONE, compress, decompress
from kafkalite.records.reader import RecordBatchView
from kafkalite_server.log.transaction_index import AbortedTxn

DELETE_HORIZON_BIT = 0x40
"""Attribute bit saying the base timestamp is the batch's delete horizon (KIP-534)."""

_BASE_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")
_MAX_OFFSET = 2**63 - 1

LatestOffset = Callable[[bytes], int]
"""The offset map's lookup: a key's newest offset in the cleaned range, or -1."""


@dataclass(frozen=True, slots=True)
class RecordSlice:
    """One v2 record inside a (decompressed) records section, located without copying."""

    start: int
    stop: int
    timestamp_delta_start: int
    """Where the timestamp delta varint starts (just after the attributes byte)."""
    timestamp_delta_stop: int
    offset: int
    timestamp: int
    key: bytes | None
    is_tombstone: bool


def v2_records(batch: bytes | memoryview, header: BatchHeader,
               max_bytes: int) -> tuple[bytes | memoryview, list[RecordSlice]]:
    """The batch's records section (decompressed) and where each record sits in it."""
    start, end = header.position + V2_HEADER_SIZE, header.position + header.size
    (base_timestamp,) = _BASE_TIMESTAMP.unpack_from(batch, header.position
                                                    + V2_BASE_TIMESTAMP_POSITION)
    if header.compression == NONE:
        data: bytes | memoryview = memoryview(batch)[start:end]
    else:
        data = decompress(header.compression, memoryview(batch)[start:end], max_bytes=max_bytes)
    slices = []
    position = 0
    for _ in range(header.record_count):
        length, body = decode_varint(data, position)
        stop = body + length
        delta_start = body + 1  # after the attributes byte
        timestamp_delta, pos = decode_varint(data, delta_start)
        delta_stop = pos
        offset_delta, pos = decode_varint(data, pos)
        key_length, pos = decode_varint(data, pos)
        key = None
        if key_length >= 0:
            key = bytes(data[pos:pos + key_length])
            pos += key_length
        value_length, pos = decode_varint(data, pos)
        slices.append(RecordSlice(position, stop, delta_start, delta_stop,
                                  header.base_offset + offset_delta,
                                  base_timestamp + timestamp_delta, key, value_length < 0))
        position = stop
    return data, slices


class TransactionTracker:
    """What one cleaning pass knows of transactions while it reads a log in offset order
    (Kafka's CleanedTransactionMetadata).

    ``aborted`` holds the aborted-transaction index entries overlapping the cleaned range;
    every transaction below the cleaning bound (the last stable offset) is complete, so a
    transactional data batch is aborted exactly when such an entry of its producer spans
    its base offset. A marker's transaction is *empty* when no batch with records of that
    producer was read since the producer's previous marker.
    """

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._aborted: dict[int, list[tuple[int, int]]] = {}
        for entry in aborted:
            self._aborted.setdefault(entry.producer_id, []).append(
                (entry.first_offset, entry.last_offset))
        for spans in self._aborted.values():
            spans.sort()
        self._read: set[int] = set()
        """Producers with a batch of records in their current transaction."""
        self._kept: set[int] = set()
        """Producers whose current transaction keeps some record after this pass."""

    def is_aborted(self, header: BatchHeader) -> bool:
        if header.is_control or not header.is_transactional:
            return False
        spans = self._aborted.get(header.producer_id, ())
        index = bisect.bisect_right(spans, (header.base_offset, _MAX_OFFSET)) - 1
        return index >= 0 and spans[index][0] <= header.base_offset <= spans[index][1]

    def on_data(self, header: BatchHeader, kept: int) -> None:
        """A transactional data batch was read and ``kept`` of its records survive."""
        if header.is_transactional and header.record_count:
            self._read.add(header.producer_id)
            if kept:
                self._kept.add(header.producer_id)

    def on_marker(self, header: BatchHeader) -> tuple[bool, bool]:
        """(the marker's transaction is empty, it was emptied by this pass)."""
        producer_id = header.producer_id
        read, kept = producer_id in self._read, producer_id in self._kept
        self._read.discard(producer_id)
        self._kept.discard(producer_id)
        return not read, read and not kept


def keys_and_offsets(batch: bytes | memoryview, header: BatchHeader,
                     max_bytes: int) -> list[tuple[bytes, int]]:
    """(key, offset) of every keyed record of a data batch (what the offset map learns)."""
    if header.is_control:
        return []
    if header.magic >= 2:
        return [(r.key, r.offset) for r in v2_records(batch, header, max_bytes)[1]
                if r.key is not None]
    view = RecordBatchView(bytes(batch[header.position:header.position + header.size]),
                           _at_zero(header))
    return [(r.key, r.offset) for r in view.records(max_bytes=max_bytes) if r.key is not None]


@dataclass(frozen=True, slots=True)
class FilteredBatch:
    """What compaction made of one batch; ``data`` is None when the batch goes."""

    data: bytes | None
    changed: bool
    kept: int
    dropped: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    delete_horizon: int | None = None
    """The horizon of the tombstones this batch still holds (None: it holds none)."""


def filter_batch(batch: bytes | memoryview, header: BatchHeader, *, latest: LatestOffset,
                 now_ms: int, delete_retention_ms: int, retain_empty: bool,
                 max_bytes: int, aborted: bool = False,
                 empty_transaction: bool = False) -> FilteredBatch:
    """Compact one batch (``header.position`` locates it inside ``batch``).

    ``aborted``: a data batch of an aborted transaction (all its records go).
    ``empty_transaction``: a marker whose transaction has no record left in the log."""
    if header.is_control:
        return _filter_marker(batch, header, now_ms, delete_retention_ms, retain_empty,
                              max_bytes, empty_transaction)
    if header.magic < 2:
        return _filter_legacy(batch, header, latest, max_bytes)
    data, records = v2_records(batch, header, max_bytes)
    horizon = (_BASE_TIMESTAMP.unpack_from(batch, header.position + V2_BASE_TIMESTAMP_POSITION)[0]
               if header.attributes & DELETE_HORIZON_BIT else None)
    kept = []
    for record in records:
        if aborted or record.key is None or latest(record.key) > record.offset:
            continue
        if record.is_tombstone and horizon is not None and now_ms >= horizon:
            continue
        kept.append(record)
    has_tombstones = any(record.is_tombstone for record in kept)
    stamp = has_tombstones and horizon is None
    if len(kept) == len(records) and not stamp:
        result = _unchanged(batch, header, len(kept))
        return FilteredBatch(result.data, False, len(kept), 0, header.last_offset,
                             header.max_timestamp, header.last_offset,
                             horizon if has_tombstones else None)
    dropped = len(records) - len(kept)
    if not kept:
        if not retain_empty:
            return FilteredBatch(None, True, 0, dropped, header.last_offset, -1, -1)
        return FilteredBatch(_empty_batch(header), True, 0, dropped, header.last_offset,
                             header.max_timestamp, header.last_offset)
    if stamp:
        horizon = now_ms + delete_retention_ms
    rebuilt, max_timestamp, offset_of_max = _rebuild(batch, header, data, kept, horizon)
    return FilteredBatch(rebuilt, True, len(kept), dropped, header.last_offset, max_timestamp,
                         offset_of_max, horizon if has_tombstones else None)


def _filter_marker(batch: bytes | memoryview, header: BatchHeader, now_ms: int,
                   delete_retention_ms: int, retain_empty: bool, max_bytes: int,
                   empty_transaction: bool) -> FilteredBatch:
    """A marker stays while its transaction has records; then it gets a delete horizon,
    and goes once the horizon has passed (unless it is its producer's last batch)."""
    count = header.record_count
    if not empty_transaction:
        return _unchanged(batch, header, count)
    if header.attributes & DELETE_HORIZON_BIT:
        (horizon,) = _BASE_TIMESTAMP.unpack_from(batch, header.position
                                                 + V2_BASE_TIMESTAMP_POSITION)
        if now_ms >= horizon and not retain_empty:
            return FilteredBatch(None, True, 0, count, header.last_offset, -1, -1)
        result = _unchanged(batch, header, count)
        return replace(result, delete_horizon=horizon if now_ms < horizon else None)
    horizon = now_ms + delete_retention_ms
    data, records = v2_records(batch, header, max_bytes)
    rebuilt, max_timestamp, offset_of_max = _rebuild(batch, header, data, records, horizon)
    return FilteredBatch(rebuilt, True, count, 0, header.last_offset, max_timestamp,
                         offset_of_max, horizon)


def _unchanged(batch: bytes | memoryview, header: BatchHeader, kept: int) -> FilteredBatch:
    data = bytes(batch[header.position:header.position + header.size])
    return FilteredBatch(data, False, kept, 0, header.last_offset, header.max_timestamp,
                         header.last_offset)


def _filter_legacy(batch: bytes | memoryview, header: BatchHeader, latest: LatestOffset,
                   max_bytes: int) -> FilteredBatch:
    view = RecordBatchView(bytes(batch[header.position:header.position + header.size]),
                           _at_zero(header))
    records = view.records(max_bytes=max_bytes)
    live = [r for r in records if r.key is not None and latest(r.key) <= r.offset]
    if live:
        return _unchanged(batch, header, len(records))
    return FilteredBatch(None, True, 0, len(records), header.last_offset, -1, -1)


def _at_zero(header: BatchHeader) -> BatchHeader:
    return replace(header, position=0)


def _rebuild(batch: bytes | memoryview, header: BatchHeader, data: bytes | memoryview,
             kept: list[RecordSlice], horizon: int | None) -> tuple[bytes, int, int]:
    """The batch with only ``kept`` records; (bytes, max timestamp, its offset)."""
    base = header.position
    (base_timestamp,) = _BASE_TIMESTAMP.unpack_from(batch, base + V2_BASE_TIMESTAMP_POSITION)
    attributes = header.attributes
    if horizon is not None and not attributes & DELETE_HORIZON_BIT:
        attributes |= DELETE_HORIZON_BIT
        new_base_timestamp = horizon
        parts = []
        for record in kept:
            body = b"".join((bytes(data[record.timestamp_delta_start - 1:
                                        record.timestamp_delta_start]),
                             encode_varint(record.timestamp - horizon),
                             bytes(data[record.timestamp_delta_stop:record.stop])))
            parts.append(encode_varint(len(body)) + body)
        records = b"".join(parts)
    else:
        new_base_timestamp = base_timestamp
        records = b"".join(bytes(data[record.start:record.stop]) for record in kept)
    if header.timestamp_type == 1:  # LogAppendTime: every record carries the batch's time
        max_timestamp, offset_of_max = header.max_timestamp, kept[-1].offset
    else:
        newest = max(kept, key=lambda record: record.timestamp)
        max_timestamp, offset_of_max = newest.timestamp, newest.offset
    if header.compression != NONE:
        records = compress(header.compression, records)
    packed = _header_bytes(header, attributes, new_base_timestamp, max_timestamp, len(kept),
                           len(records))
    crc = crc32c.crc32c(records, crc32c.crc32c(memoryview(packed)[V2_CRC_START:]))
    _CRC.pack_into(packed, V2_CRC_POSITION, crc)
    return bytes(packed) + records, max_timestamp, offset_of_max


def _empty_batch(header: BatchHeader) -> bytes:
    """A record-less batch keeping the producer's id, epoch, last sequence and offsets."""
    attributes = header.attributes & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT)
    packed = _header_bytes(header, attributes & ~COMPRESSION_MASK, header.max_timestamp,
                           header.max_timestamp, 0, 0)
    _CRC.pack_into(packed, V2_CRC_POSITION, crc32c.crc32c(memoryview(packed)[V2_CRC_START:]))
    return bytes(packed)


def _header_bytes(header: BatchHeader, attributes: int, base_timestamp: int,
                  max_timestamp: int, count: int, records_size: int) -> bytearray:
    return bytearray(V2_HEADER.pack(
        header.base_offset, V2_HEADER_SIZE - LOG_OVERHEAD + records_size,
        header.partition_leader_epoch, 2, 0, attributes,
        header.last_offset - header.base_offset, base_timestamp, max_timestamp,
        header.producer_id, header.producer_epoch, header.base_sequence, count))
