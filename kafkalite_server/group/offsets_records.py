"""Coordinator state <-> ``__consumer_offsets`` records, and replaying a partition's records.

The byte layouts are Kafka's (``kafkalite.protocol.offsets_topic``); this module only maps
them to the coordinator's types. Replay follows compaction semantics: the last value per
key wins and a null value (tombstone) deletes the key.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.offsets_topic import (
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_topic_key,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from kafkalite.records import Record
from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition
from kafkalite_server.group.store import GroupMetadataRecord, LoadedGroup, MemberRecord
from kafkalite_server.group.txn_offsets_replay import TxnOffsetsReplay

log = logging.getLogger(__name__)

KeyValue = tuple[bytes, bytes | None]

#: Kafka writes OffsetCommitValue v3, and v1 only to carry an explicit expire timestamp.
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_WITH_EXPIRY_VERSION = 1
GROUP_VALUE_VERSION = 3


def offset_commit_record(
    group_id: str, tp: TopicPartition, committed: OffsetAndMetadata
) -> KeyValue:
    key = encode_offset_commit_key(group_id, tp.topic, tp.partition)
    fields = {
        "offset": committed.offset,
        "leader_epoch": committed.leader_epoch,
        "metadata": committed.metadata,
        "commit_timestamp": committed.commit_timestamp_ms,
    }
    if committed.expire_timestamp_ms is None:
        return key, encode_offset_commit_value(fields, OFFSET_VALUE_VERSION)
    fields["expire_timestamp"] = committed.expire_timestamp_ms
    return key, encode_offset_commit_value(fields, OFFSET_VALUE_WITH_EXPIRY_VERSION)


def offset_tombstone(group_id: str, tp: TopicPartition) -> KeyValue:
    return encode_offset_commit_key(group_id, tp.topic, tp.partition), None


def group_metadata_record(group_id: str, record: GroupMetadataRecord) -> KeyValue:
    value = {
        "protocol_type": record.protocol_type,
        "generation": record.generation_id,
        "protocol": record.protocol_name,
        "leader": record.leader_id,
        "current_state_timestamp": record.state_timestamp_ms,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms,
                "session_timeout": m.session_timeout_ms,
                "subscription": m.subscription,
                "assignment": m.assignment,
            }
            for m in record.members
        ],
    }
    return encode_group_metadata_key(group_id), encode_group_metadata_value(
        value, GROUP_VALUE_VERSION
    )


def group_tombstone(group_id: str) -> KeyValue:
    return encode_group_metadata_key(group_id), None


def _offset_from_value(data: bytes) -> OffsetAndMetadata:
    value = decode_offset_commit_value(data)
    expire = value.get("expire_timestamp", -1)
    return OffsetAndMetadata(
        offset=value["offset"],
        leader_epoch=value.get("leader_epoch", -1),
        metadata=value["metadata"],
        commit_timestamp_ms=value["commit_timestamp"],
        expire_timestamp_ms=None if expire == -1 else expire,
    )


def _group_from_value(data: bytes) -> GroupMetadataRecord:
    value = decode_group_metadata_value(data)
    return GroupMetadataRecord(
        protocol_type=value["protocol_type"],
        generation_id=value["generation"],
        protocol_name=value["protocol"],
        leader_id=value["leader"],
        state_timestamp_ms=value.get("current_state_timestamp", -1),
        members=[
            MemberRecord(
                member_id=m["member_id"],
                group_instance_id=m.get("group_instance_id"),
                client_id=m["client_id"],
                client_host=m["client_host"],
                rebalance_timeout_ms=m.get("rebalance_timeout", -1),
                session_timeout_ms=m["session_timeout"],
                subscription=m["subscription"],
                assignment=m["assignment"],
            )
            for m in value["members"]
        ],
    )


class OffsetsReplay:
    """Folds the records of one offsets partition, oldest first, into the groups they leave."""

    def __init__(self) -> None:
        self._metadata: dict[str, GroupMetadataRecord | None] = {}
        self._offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self.skipped = 0
        self.transactional = TxnOffsetsReplay()

    def feed(self, records: Iterable[Record]) -> None:
        for record in records:
            if record.batch.is_transactional:
                for key, value in self.transactional.feed(record):
                    self._apply_logged(key, value, record.offset)
                continue
            if record.batch.is_control or record.key is None:
                continue
            self._apply_logged(record.key, record.value, record.offset)

    def _apply_logged(self, key: bytes, value: bytes | None, offset: int) -> None:
        try:
            self._apply(key, value)
        except (ProtocolDecodeError, KeyError, ValueError) as exc:
            self.skipped += 1
            log.warning("skipping unreadable offsets record at %d: %s", offset, exc)

    def _apply(self, key_bytes: bytes, value: bytes | None) -> None:
        decoded = decode_offsets_topic_key(key_bytes)
        if decoded is None:
            return  # a record type this coordinator does not use (KIP-848, share groups)
        kind, key = decoded
        group_id = key["group"]
        if kind == "offset":
            tp = TopicPartition(key["topic"], key["partition"])
            offsets = self._offsets.setdefault(group_id, {})
            if value is None:
                offsets.pop(tp, None)
            else:
                offsets[tp] = _offset_from_value(value)
        else:
            self._metadata[group_id] = None if value is None else _group_from_value(value)

    def loaded_groups(self) -> list[LoadedGroup]:
        """Groups that still have metadata or offsets once every tombstone is applied."""
        group_ids = [g for g, m in self._metadata.items() if m is not None]
        group_ids += [g for g, o in self._offsets.items() if o and g not in group_ids]
        return [
            LoadedGroup(g, self._metadata.get(g), dict(self._offsets.get(g, {}))) for g in group_ids
        ]
