"""What a share partition needs to know of the records the leader read from its log: each
batch's offsets and whether its records may be handed to a member, read from the batch
headers only (records stay bytes, as on the fetch path).

Not deliverable: control batches (transaction markers), and under read_committed the
batches of transactions that were aborted (the replica manager lists the aborted
transactions of what it read, as it does for a consumer's Fetch).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafkalite.records.batch_header import BatchHeader, iter_batch_headers
from kafkalite_server.log.transaction_index import AbortedTxn
from kafkalite_server.share.partition import AcquiredRange, LogBatch


@dataclass(frozen=True)
class ReadBatches:
    headers: list[BatchHeader]
    batches: list[LogBatch]
    """One per header, with the offsets it covers."""


def read_batches(data: bytes, read_from: int,
                 aborted: Iterable[AbortedTxn] | None) -> ReadBatches:
    """The batches of ``data`` (read from the log at ``read_from``). A legacy compressed
    message only tells its last offset: it covers the offsets since the entry before."""
    headers = list(iter_batch_headers(data))
    pending = sorted(aborted or (), key=lambda txn: txn.first_offset)
    aborting: set[int] = set()
    batches = []
    next_first = read_from
    for header in headers:
        first = header.base_offset if header.magic >= 2 else min(next_first, header.last_offset)
        while pending and pending[0].first_offset <= first:
            aborting.add(pending.pop(0).producer_id)
        deliverable = True
        if header.is_control:
            deliverable = False
            aborting.discard(header.producer_id)  # the marker ends that transaction
        elif header.is_transactional and header.producer_id in aborting:
            deliverable = False
        batches.append(LogBatch(first, header.last_offset, deliverable))
        next_first = header.last_offset + 1
    return ReadBatches(headers, batches)


def records_for(data: bytes, read: ReadBatches, acquired: list[AcquiredRange]) -> bytes:
    """The part of ``data`` from the first batch holding an acquired record to the last
    one: what the member is sent (it keeps the acquired offsets only)."""
    if not acquired:
        return b""
    low, high = acquired[0].first_offset, acquired[-1].last_offset
    chosen = [(h.position, h.position + h.size)
              for h, b in zip(read.headers, read.batches, strict=True)
              if b.last_offset >= low and b.first_offset <= high]
    if not chosen:
        return b""
    return data[chosen[0][0]:chosen[-1][1]]
