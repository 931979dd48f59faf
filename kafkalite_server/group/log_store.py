"""The coordinator's :class:`GroupStore` on the broker's ``__consumer_offsets`` partitions.

Each store call is one v2 record batch appended through the coordinator runtime, so a
commit of many partitions is atomic, fetchers of the offsets topic wake up, and the call
returns once the bytes are in the leader's log; the request that caused it then waits
for the ISR (the runtime's ``committed``) before it is answered (acks=all).
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalite.records import encode_batch
from kafkalite_server.coordinator.runtime import CoordinatorRuntime
from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition
from kafkalite_server.group.offsets_records import (
    KeyValue,
    group_metadata_record,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)
from kafkalite_server.group.store import GroupMetadataRecord


class OffsetsLogStore:
    def __init__(self, runtime: CoordinatorRuntime, now_ms: Callable[[], int]) -> None:
        self._runtime = runtime
        self._now_ms = now_ms

    def store_group(self, partition: int, group_id: str, record: GroupMetadataRecord) -> None:
        self._append(partition, [group_metadata_record(group_id, record)])

    def store_offsets(
        self, partition: int, group_id: str, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> None:
        self._append(
            partition, [offset_commit_record(group_id, tp, o) for tp, o in offsets.items()]
        )

    def delete_offsets(
        self, partition: int, group_id: str, offsets: list[TopicPartition]
    ) -> None:
        self._append(partition, [offset_tombstone(group_id, tp) for tp in offsets])

    def delete_group(self, partition: int, group_id: str, offsets: list[TopicPartition]) -> None:
        entries = [offset_tombstone(group_id, tp) for tp in offsets]
        self._append(partition, [*entries, group_tombstone(group_id)])

    def append_transactional(self, partition: int, batch: bytes) -> None:
        """A TxnOffsetCommit's batch, built by the caller with the producer's id and epoch."""
        self._runtime.append(partition, batch, transactional=True)

    def _append(self, partition: int, entries: list[KeyValue]) -> None:
        """Raises NotLeaderOrFollowerError if this broker no longer leads the partition."""
        now = self._now_ms()
        self._runtime.append(partition,
                             encode_batch((key, value, now, ()) for key, value in entries))
