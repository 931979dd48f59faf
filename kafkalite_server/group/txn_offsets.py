"""Offsets committed inside transactions (TxnOffsetCommit): pending until the marker.

A TxnOffsetCommit is written to the group's ``__consumer_offsets`` partition at once, as a
transactional batch carrying the producer's id and epoch (so the partition's last stable
offset waits for it), but the group's committed offsets do not change: the entries wait
here, per partition and producer id. The coordinator's marker on that partition settles
them: a commit applies them to the group, an abort drops them. Loading a partition does
the same with the log (:class:`~kafkalite_server.group.txn_offsets_replay.TxnOffsetsReplay`): entries of committed transactions are
replayed in marker order, and those of transactions still open at the end stay pending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkalite.errors import KafkaError, ProtocolDecodeError
from kafkalite.protocol.offsets_topic import decode_offsets_topic_key
from kafkalite.records import RecordBatchBuilder
from kafkalite_server.group import error_codes as codes
from kafkalite_server.group.offsets import OffsetAndMetadata, OffsetCommitEntry, TopicPartition
from kafkalite_server.group.offsets_records import (
    KeyValue,
    _offset_from_value,
    offset_commit_record,
)
from kafkalite_server.group.txn_offsets_replay import TxnOffsetsReplay

if TYPE_CHECKING:
    from kafkalite_server.group.coordinator import GroupCoordinator
    from kafkalite_server.group.log_store import OffsetsLogStore

log = logging.getLogger(__name__)

class TransactionalOffsets:
    """Pending transactional offsets of the offsets partitions this broker leads."""

    def __init__(self, coordinator: GroupCoordinator, store: OffsetsLogStore,
                 now_ms: Callable[[], int]) -> None:
        self._coordinator = coordinator
        self._store = store
        self._now_ms = now_ms
        self._pending: dict[int, dict[int, list[KeyValue]]] = {}
        """Offsets partition -> producer id -> records awaiting its marker."""

    def commit(self, group_id: str, producer_id: int, producer_epoch: int,
               offsets: dict[TopicPartition, OffsetCommitEntry], *, generation_id: int = -1,
               member_id: str = "", group_instance_id: str | None = None
               ) -> dict[TopicPartition, int]:
        """TxnOffsetCommit after the transaction coordinator's check: an error per partition."""
        error = self._coordinator.validate_transactional_commit(
            group_id, generation_id, member_id, group_instance_id)
        if error:
            return dict.fromkeys(offsets, error)
        now = self._now_ms()
        results = {}
        entries: list[KeyValue] = []
        for tp, entry in offsets.items():
            metadata = entry.metadata or ""
            if len(metadata) > self._coordinator.config.offset_metadata_max_bytes:
                results[tp] = codes.OFFSET_METADATA_TOO_LARGE
                continue
            entries.append(offset_commit_record(group_id, tp, OffsetAndMetadata(
                entry.offset, entry.leader_epoch, metadata, now)))
            results[tp] = codes.NONE
        if not entries:
            return results
        partition = self._coordinator.partition_for(group_id)
        builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch,
                                     is_transactional=True, batch_size=1 << 62)
        for key, value in entries:
            builder.append(now, key, value)
        try:
            self._store.append_transactional(partition, builder.build())
        except (KafkaError, OSError) as exc:
            log.warning("group %s: storing transactional offsets failed: %s", group_id, exc)
            error = codes.storage_error_code(exc)
            return {tp: error if code == codes.NONE else code for tp, code in results.items()}
        self._pending.setdefault(partition, {}).setdefault(producer_id, []).extend(entries)
        return results

    def pending_by_group(self) -> dict[str, set[TopicPartition]]:
        """Per group, the partitions with an offset waiting for its transaction's marker:
        offset retention keeps their committed offsets and the group itself."""
        pending: dict[str, set[TopicPartition]] = {}
        for producers in self._pending.values():
            for entries in producers.values():
                for key, _ in entries:
                    decoded = _offset_key(key)
                    if decoded is not None:
                        pending.setdefault(decoded[0], set()).add(decoded[1])
        return pending

    def forget_deleted_topics(self, deleted: Callable[[str], bool],
                              partition: int | None = None) -> None:
        """Drops pending offsets of topics ``deleted`` says are gone (of ``partition``
        only, if given): their transaction's commit must not bring them back."""
        for index, producers in self._pending.items():
            if partition not in (None, index):
                continue
            for producer_id, entries in producers.items():
                producers[producer_id] = [
                    (key, value) for key, value in entries
                    if (tp := _offset_key(key)) is None or not deleted(tp[1].topic)]

    def complete(self, partition: int, producer_id: int, commit: bool) -> None:
        """The marker for ``producer_id`` reached offsets ``partition``."""
        entries = self._pending.get(partition, {}).pop(producer_id, [])
        if commit:
            self.apply(entries)

    def apply(self, entries: list[KeyValue]) -> None:
        by_group: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        for key, value in entries:
            decoded = _offset_key(key)
            if decoded is None or value is None:
                continue
            try:
                by_group.setdefault(decoded[0], {})[decoded[1]] = _offset_from_value(value)
            except (ProtocolDecodeError, KeyError, ValueError) as exc:
                log.warning("skipping an unreadable transactional offset: %s", exc)
        for group_id, offsets in by_group.items():
            self._coordinator.apply_transactional_offsets(group_id, offsets)

    def loaded(self, partition: int, replay: TxnOffsetsReplay) -> None:
        """Transactions still open when the partition's log was replayed stay pending."""
        self._pending[partition] = {pid: list(e) for pid, e in replay.open.items()}

    def unload(self, partition: int) -> None:
        self._pending.pop(partition, None)


def _offset_key(key: bytes) -> tuple[str, TopicPartition] | None:
    """The group and partition an offset commit record's key names; None for other keys."""
    try:
        decoded = decode_offsets_topic_key(key)
    except ProtocolDecodeError as exc:
        log.warning("skipping an unreadable transactional offset key: %s", exc)
        return None
    if decoded is None or decoded[0] != "offset":
        return None
    fields = decoded[1]
    return fields["group"], TopicPartition(fields["topic"], fields["partition"])
