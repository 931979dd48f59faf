"""The coordinator's :class:`GroupStore` on the broker's ``__consumer_offsets`` partitions.

Each store call is one v2 record batch appended through the replica manager, so a commit
of many partitions is atomic, fetchers of the offsets topic wake up, and the call returns
once the bytes are in the leader's log. The last offset appended to each partition is
kept, so the service can wait until the ISR has it before answering (acks=all).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kafkalite.records import Record, encode_batch, iter_batches
from kafkalite_server.group.config import OFFSETS_TOPIC
from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition
from kafkalite_server.group.offsets_records import (
    KeyValue,
    group_metadata_record,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)
from kafkalite_server.group.store import GroupMetadataRecord
from kafkalite_server.log.log import Log
from kafkalite_server.replication.replica_manager import ReplicaManager

#: How much of the log one loading step reads before yielding to the event loop.
LOAD_CHUNK_BYTES = 1024 * 1024


class OffsetsLogStore:
    def __init__(self, replicas: ReplicaManager, now_ms: Callable[[], int]) -> None:
        self._replicas = replicas
        self._now_ms = now_ms
        self.last_appended: dict[int, int] = {}

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
        """A TxnOffsetCommit's batch, built by the caller with the producer's id and epoch;
        its offset counts for :attr:`last_appended` like every other write."""
        info = self._replicas.append_local(OFFSETS_TOPIC, partition,
                                           memoryview(bytearray(batch)), coordinator=True)
        self.last_appended[partition] = info.last_offset

    def _append(self, partition: int, entries: list[KeyValue]) -> None:
        """Raises NotLeaderOrFollowerError if this broker no longer leads the partition."""
        now = self._now_ms()
        batch = bytearray(encode_batch((key, value, now, ()) for key, value in entries))
        info = self._replicas.append_local(OFFSETS_TOPIC, partition, memoryview(batch))
        self.last_appended[partition] = info.last_offset

    def log_of(self, partition: int) -> Log:
        return self._replicas.leader_partition(OFFSETS_TOPIC, partition).log


def read_log_chunks(log: Log, chunk_bytes: int = LOAD_CHUNK_BYTES) -> Iterator[list[Record]]:
    """The log's records from its start, in chunks of whole batches, for replay."""
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        region = log.read(offset, chunk_bytes)
        if region is None:
            return
        records: list[Record] = []
        next_offset = offset
        for batch in iter_batches(region.read_bytes()):
            batch.ensure_valid()
            records.extend(batch.records())
            next_offset = batch.next_offset
        if next_offset <= offset:
            return  # no complete batch: nothing more can be read
        offset = next_offset
        yield records
