"""Sans-IO record formats: RecordBatch v2, legacy message sets (magic 0/1), compression.

The producer builds batches with :class:`BatchBuilder` (or :func:`encode_batch`), the
consumer reads them with :func:`decode_batches` / :func:`iter_batches`, and the broker
frames them with :mod:`kafkalite.records.batch_header` and stamps legacy produce with
:func:`assign_legacy_offsets`.
"""

from kafkalite.records.builder import (
    BatchBuilder,
    MessageSetBuilder,
    RecordBatchBuilder,
    encode_batch,
    estimate_record_size,
)
from kafkalite.records.compression import (
    codec_id,
    codec_name,
    compress,
    decompress,
    iter_decompress,
)
from kafkalite.records.legacy_messages import assign_legacy_offsets
from kafkalite.records.reader import RecordBatchView, decode_batches, iter_batches
from kafkalite.records.record import Record

__all__ = [
    "BatchBuilder",
    "MessageSetBuilder",
    "Record",
    "RecordBatchBuilder",
    "RecordBatchView",
    "assign_legacy_offsets",
    "codec_id",
    "codec_name",
    "compress",
    "decode_batches",
    "decompress",
    "encode_batch",
    "estimate_record_size",
    "iter_batches",
    "iter_decompress",
]
