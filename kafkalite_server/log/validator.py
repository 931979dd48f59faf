"""Validation and offset assignment for the records of one partition in a Produce request.

Two steps, because idempotence sits between them: :func:`validate_records` checks the
bytes and returns their headers (the log then asks producer state whether the batch is a
retry), and :func:`assign_offsets` stamps offsets and the leader epoch into the buffer in
place. Like Kafka's LogValidator, every record of a v2 batch is checked (lengths, offset
deltas, the header's record count; a key on compacted topics) without building record
objects; a compressed batch is decompressed for that, as a stream, but is stored as
received. Its records may decompress to at most ``max.message.bytes`` and at most the
broker's ``kafkalite.batch.decompressed.max.bytes``
(:mod:`~kafkalite_server.log.decompression_limit`). The CRC is recomputed only when the
topic uses LogAppendTime. Legacy (magic 0/1) message sets are accepted for old Produce
versions and up-converted to v2 when offsets are assigned.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from kafkalite.errors import CorruptRecordError, DecompressedSizeError
from kafkalite.protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    MessageTooLargeError,
    UnsupportedCompressionTypeError,
)
from kafkalite.records.batch_header import (
    TIMESTAMP_TYPE_BIT,
    V2_CRC_START,
    BatchHeader,
    batch_crc_is_valid,
    patch_v2_batch,
    read_batch_header,
)
from kafkalite.records.validation import InvalidRecordsError, check_batch_records
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.decompression_limit import DecompressionLimit
from kafkalite_server.log.up_conversion import up_convert

ZSTD = 4
_LAST_CODEC = ZSTD
_MIN_ZSTD_PRODUCE_VERSION = 7
_MIN_SINGLE_BATCH_PRODUCE_VERSION = 3

_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_V2_ATTRIBUTES = 21
_V2_MAX_TIMESTAMP = 35
_V2_CRC = 17


class RecordValidationError(InvalidRecordError):
    """INVALID_RECORD naming the bad records: ``record_errors`` holds (index in the
    batch, message) pairs, which a Produce v8+ response carries (KIP-467)."""

    def __init__(self, context: str, record_errors: tuple[tuple[int, str], ...]) -> None:
        super().__init__(context)
        self.record_errors = record_errors


@dataclass(frozen=True, slots=True)
class AssignedRecords:
    """Offset-stamped entries ready for the segment, and what the append reports."""

    data: bytearray | memoryview
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    log_append_time_ms: int


def _parse_entries(records: bytearray | memoryview) -> list[BatchHeader]:
    """Headers of every entry; a truncated or unparsable one is CorruptMessageError."""
    headers = []
    position = 0
    while position < len(records):
        try:
            header = read_batch_header(records, position)
        except CorruptRecordError as exc:
            raise CorruptMessageError(str(exc)) from None
        if header is None or position + header.size > len(records):
            raise CorruptMessageError(f"truncated record entry at byte {position}")
        headers.append(header)
        position += header.size
    return headers


def validate_replicated(records: bytearray | memoryview,
                        next_offset: int) -> list[BatchHeader]:
    """Batches fetched from a leader: complete, CRC-valid, offsets continuing the log."""
    headers = _parse_entries(records)
    for header in headers:
        if not batch_crc_is_valid(records, header):
            raise CorruptMessageError(f"CRC mismatch in the batch at offset "
                                      f"{header.base_offset}")
        if header.base_offset < next_offset or header.last_offset < header.base_offset:
            raise InvalidRecordError(f"batch offsets {header.base_offset}..."
                                     f"{header.last_offset} do not follow {next_offset - 1}")
        next_offset = header.next_offset
    return headers


def validate_records(records: bytearray | memoryview, api_version: int,
                     config: LogConfig, *, coordinator: bool = False,
                     limit: DecompressionLimit | None = None) -> list[BatchHeader]:
    """Check every entry of a produce payload; returns their headers in order.

    Raises CorruptMessageError (bad CRC, truncated or unparsable entry),
    InvalidRecordError (not exactly one v2 batch for Produce v3+, empty, control batch),
    UnsupportedCompressionTypeError (zstd before Produce v7) or MessageTooLargeError.
    ``limit`` bounds decompression (default: the topic's ``max.message.bytes``).
    """
    limit = limit or DecompressionLimit.of(config, None)
    headers = _parse_entries(records)
    if not headers:
        raise InvalidRecordError("the produce request holds no records")
    if api_version >= _MIN_SINGLE_BATCH_PRODUCE_VERSION and (
            len(headers) != 1 or headers[0].magic != 2):
        raise InvalidRecordError(f"Produce v{api_version} needs exactly one magic-2 batch, "
                                 f"got {len(headers)} entries of magic {headers[0].magic}")
    if len({header.magic >= 2 for header in headers}) > 1:
        raise InvalidRecordError("a produce payload may not mix v2 batches and legacy messages")
    for header in headers:
        _validate_entry(records, header, api_version, config, coordinator, limit)
    return headers


def _validate_entry(records: bytearray | memoryview, header: BatchHeader, api_version: int,
                    config: LogConfig, coordinator: bool, limit: DecompressionLimit) -> None:
    if header.size > config.max_message_bytes:
        raise MessageTooLargeError(f"batch of {header.size} bytes exceeds max.message.bytes "
                                   f"{config.max_message_bytes}")
    codec = header.compression
    if codec > _LAST_CODEC:
        raise InvalidRecordError(f"unknown compression codec {codec}")
    if codec == ZSTD and (header.magic < 2 or api_version < _MIN_ZSTD_PRODUCE_VERSION):
        raise UnsupportedCompressionTypeError(
            f"zstd needs magic 2 and Produce v{_MIN_ZSTD_PRODUCE_VERSION}+")
    if not batch_crc_is_valid(records, header):
        raise CorruptMessageError(f"CRC mismatch in the batch at byte {header.position}")
    if header.magic == 2:
        _validate_v2_batch(records, header, config, coordinator, limit)


def _validate_v2_batch(records: bytearray | memoryview, header: BatchHeader,
                       config: LogConfig, coordinator: bool, limit: DecompressionLimit) -> None:
    """The header's own consistency, then every record (Kafka's validateBatch/Record).
    ``coordinator``: a coordinator's own transactional batch (TxnOffsetCommit), which has
    a producer id but no sequence, as in Kafka's appends with origin Coordinator."""
    if header.record_count <= 0:
        raise InvalidRecordError(f"the batch header counts {header.record_count} records")
    if header.record_count != header.last_offset - header.base_offset + 1:
        raise InvalidRecordError(f"the batch header counts {header.record_count} records "
                                 f"but its last offset delta is "
                                 f"{header.last_offset - header.base_offset}")
    if header.is_control:
        raise InvalidRecordError("clients may not produce control batches")
    if header.producer_id >= 0 and header.base_sequence < 0 and not coordinator:
        raise InvalidRecordError(f"invalid base sequence {header.base_sequence} in a batch "
                                 f"of producer {header.producer_id}")
    try:
        check_batch_records(records, header, max_bytes=limit.max_bytes,
                            keys_required="compact" in config.cleanup_policy.split(","))
    except DecompressedSizeError:
        raise limit.too_large("the batch's records") from None
    except InvalidRecordsError as exc:
        raise RecordValidationError(str(exc), tuple(
            (problem.index, problem.message) for problem in exc.problems)) from None
    except CorruptRecordError as exc:
        raise CorruptMessageError(str(exc)) from None


def assign_offsets(records: bytearray | memoryview, headers: list[BatchHeader],
                   first_offset: int, leader_epoch: int, config: LogConfig,
                   now_ms: int, limit: DecompressionLimit | None = None) -> AssignedRecords:
    """Stamp offsets and the leader epoch into v2 ``records`` in place.

    A legacy message set is first up-converted to one v2 batch, a new buffer
    (:func:`~kafkalite_server.log.up_conversion.up_convert`): the log writes only v2.
    """
    if headers[0].magic < 2:
        records, headers = up_convert(records, headers, config,
                                      limit or DecompressionLimit.of(config, None))
    next_offset = first_offset
    max_timestamp = -1
    offset_of_max = first_offset
    for header in headers:
        patch_v2_batch(records, header.position, next_offset, leader_epoch)
        last = next_offset + header.last_offset - header.base_offset
        timestamp = header.max_timestamp
        if config.log_append_time:
            timestamp = _stamp_v2_log_append_time(records, header, now_ms)
        if timestamp > max_timestamp:
            max_timestamp, offset_of_max = timestamp, last
        next_offset = last + 1
    return AssignedRecords(records, first_offset, next_offset - 1, max_timestamp, offset_of_max,
                           next_offset - first_offset,
                           now_ms if config.log_append_time else -1)


def _stamp_v2_log_append_time(records: bytearray | memoryview, header: BatchHeader,
                              now_ms: int) -> int:
    """Set the timestamp-type bit and maxTimestamp, then recompute the CRC-32C."""
    position = header.position
    _INT16.pack_into(records, position + _V2_ATTRIBUTES, header.attributes | TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(records, position + _V2_MAX_TIMESTAMP, now_ms)
    crc = crc32c.crc32c(memoryview(records)[position + V2_CRC_START:position + header.size])
    _UINT32.pack_into(records, position + _V2_CRC, crc)
    return now_ms
