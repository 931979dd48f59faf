"""Up-conversion: a produced legacy message set (magic 0/1) becomes one RecordBatch v2.

The log writes only v2 batches (Kafka 3.0's behaviour, whatever ``message.format.version``
says), so a Produce v0-2 payload is rewritten before offsets are assigned, as Kafka's
LogValidator does:

- every message of the set, the inner messages of compressed wrappers included, becomes
  one record of a single batch, in order (offsets follow when the log assigns them);
- magic 0 has no timestamp, so its records carry -1 (NO_TIMESTAMP), as Kafka stores them;
- magic 1 keeps each message's CreateTime; the inner messages of a wrapper marked
  LogAppendTime take the wrapper's timestamp (the legacy reader's rule);
- the batch uses the topic's ``compression.type``, or, for ``producer``, the codec of the
  set's compressed wrappers (none when no message is compressed);
- the batch carries no producer id: legacy produce is never idempotent.

The topic's LogAppendTime stamping happens afterwards, on the v2 batch, like any other.
Logs written before this (which may hold legacy entries) stay readable: readers and
fetches handle both formats.
"""

from __future__ import annotations

from kafkalite.errors import CorruptRecordError, DecompressedSizeError
from kafkalite.protocol.errors import CorruptMessageError, MessageTooLargeError
from kafkalite.records import RecordBatchBuilder, iter_batches
from kafkalite.records.batch_header import BatchHeader, iter_batch_headers
from kafkalite.records.compression import NONE
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.decompression_limit import DecompressionLimit
from kafkalite_server.log.recompress import target_codec

_UNBOUNDED = 1 << 62  # the builder's batch_size: the whole set goes into one batch


def up_convert(records: bytearray | memoryview, headers: list[BatchHeader],
               config: LogConfig,
               limit: DecompressionLimit) -> tuple[bytearray, list[BatchHeader]]:
    """The validated legacy ``records`` (with their ``headers``) as one v2 batch."""
    codec = target_codec(config)
    if codec is None:
        codec = next((h.compression for h in headers if h.compression != NONE), NONE)
    builder = RecordBatchBuilder(compression=codec, batch_size=_UNBOUNDED)
    try:
        for entry in iter_batches(records):
            for record in entry.records(check_crcs=True, max_bytes=limit.max_bytes):
                builder.append(record.timestamp, record.key, record.value)
    except DecompressedSizeError:
        raise limit.too_large("a wrapper message's records") from None
    except CorruptRecordError as exc:
        raise CorruptMessageError(str(exc)) from None
    batch = bytearray(builder.build())
    new_headers = list(iter_batch_headers(batch))
    if new_headers[0].size > config.max_message_bytes:
        raise MessageTooLargeError(f"the legacy message set is {new_headers[0].size} bytes "
                                   f"as a v2 batch, over max.message.bytes "
                                   f"{config.max_message_bytes}")
    return batch, new_headers
