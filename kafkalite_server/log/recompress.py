"""The topic's ``compression.type``: recompress produced batches whose codec differs.

Kafka stores what the producer sent when ``compression.type=producer`` (the default) and
otherwise rewrites each batch with the topic's codec (``uncompressed`` meaning none). Only
the records section changes: a v2 batch keeps its header fields (producer id, epoch and
sequence, timestamps, record count), so idempotence and offsets are unaffected, and gets a
new length, codec bits and CRC. The records were validated before this step, within the
same :class:`~kafkalite_server.log.decompression_limit.DecompressionLimit`, which bounds
what a recompression holds decompressed.

Legacy (magic 0/1) message sets keep the producer's codec: only Produce v0-2 sends them,
and rewriting a wrapper message is the legacy up-conversion's business.
"""

from __future__ import annotations

import struct

import crc32c

from kafkalite.protocol.errors import MessageTooLargeError
from kafkalite.records import compress, decompress
from kafkalite.records.batch_header import (
    COMPRESSION_MASK,
    LOG_OVERHEAD,
    V2_ATTRIBUTES_POSITION,
    V2_CRC_POSITION,
    V2_CRC_START,
    V2_HEADER_SIZE,
    V2_LENGTH_POSITION,
    BatchHeader,
    iter_batch_headers,
)
from kafkalite.records.compression import NONE, codec_id
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.decompression_limit import DecompressionLimit

_LENGTH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_ATTRIBUTES = struct.Struct(">h")


def target_codec(config: LogConfig) -> int | None:
    """The codec id the topic stores, or None to keep the producer's."""
    if config.compression_type == "producer":
        return None
    if config.compression_type == "uncompressed":
        return NONE
    return codec_id(config.compression_type)


def recompress_for_topic(records: bytearray | memoryview, headers: list[BatchHeader],
                         config: LogConfig, limit: DecompressionLimit | None = None,
                         ) -> tuple[bytearray | memoryview, list[BatchHeader]]:
    """``records`` with every v2 batch in the topic's codec (the input when none differs)."""
    limit = limit or DecompressionLimit.of(config, None)
    target = target_codec(config)
    if target is None or all(h.magic < 2 or h.compression == target for h in headers):
        return records, headers
    out = bytearray()
    for header in headers:
        batch = memoryview(records)[header.position:header.position + header.size]
        if header.magic < 2 or header.compression == target:
            out += batch
        else:
            out += _recompressed(batch, header, target, limit.max_bytes)
    new_headers = list(iter_batch_headers(out))  # complete batches, built just above
    for header in new_headers:
        if header.size > config.max_message_bytes:
            raise MessageTooLargeError(
                f"batch of {header.size} bytes after recompression to "
                f"{config.compression_type} exceeds max.message.bytes "
                f"{config.max_message_bytes}")
    return out, new_headers


def _recompressed(batch: memoryview, header: BatchHeader, target: int,
                  max_bytes: int) -> bytearray:
    body = batch[V2_HEADER_SIZE:]
    raw = body if header.compression == NONE else decompress(header.compression, body,
                                                             max_bytes=max_bytes)
    packed = compress(target, raw)
    out = bytearray(batch[:V2_HEADER_SIZE])
    out += packed
    _LENGTH.pack_into(out, V2_LENGTH_POSITION, V2_HEADER_SIZE - LOG_OVERHEAD + len(packed))
    _ATTRIBUTES.pack_into(out, V2_ATTRIBUTES_POSITION, (header.attributes & ~COMPRESSION_MASK) | target)
    _CRC.pack_into(out, V2_CRC_POSITION, crc32c.crc32c(memoryview(out)[V2_CRC_START:]))
    return out
