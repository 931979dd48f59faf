"""Replaying the transactional batches of an offsets partition (TxnOffsetCommit records
and the markers that settle them); see :mod:`kafkalite_server.group.txn_offsets`."""

from __future__ import annotations

from kafkalite.records import Record
from kafkalite.records.control import COMMIT, CONTROL_KEY

KeyValue = tuple[bytes, bytes | None]


class TxnOffsetsReplay:
    def __init__(self) -> None:
        self.open: dict[int, list[KeyValue]] = {}
        """Producer id -> records of its transaction not yet ended in the log."""

    def feed(self, record: Record) -> list[KeyValue]:
        """Take a record of a transactional batch; returns the entries to apply now (those
        of a transaction its commit marker just ended)."""
        producer_id = record.batch.producer_id
        if not record.batch.is_control:
            if record.key is not None:
                self.open.setdefault(producer_id, []).append((record.key, record.value))
            return []
        entries = self.open.pop(producer_id, [])
        key = record.key or b""
        committed = len(key) >= CONTROL_KEY.size and CONTROL_KEY.unpack_from(key)[1] == COMMIT
        return entries if committed else []
