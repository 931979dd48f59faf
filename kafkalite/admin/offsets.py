"""Records and offsets: ListOffsets and DeleteRecords (each partition's leader), and a
group's committed offsets: OffsetFetch, OffsetCommit and OffsetDelete (its coordinator).

The request bodies and answers of OffsetFetch, OffsetCommit and ListOffsets are the
consumer's own (:mod:`kafkalite.consumer.commits`, :mod:`kafkalite.consumer.list_offsets`);
this module gives them the admin client's routing and results.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkalite.admin.groups import group_lookup
from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import GivenBroker, PartitionLeader
from kafkalite.consumer.commits import (
    committed_offsets,
    first_offset_fetch_error,
    offset_commit_request,
    offset_fetch_request,
)
from kafkalite.consumer.list_offsets import list_offsets_request
from kafkalite.errors import KafkaError, NoError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import error_for_code
from kafkalite.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition


class OffsetSpec(enum.IntEnum):
    """Which offset ``list_partition_offsets`` looks up: Kafka's special timestamps."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3


class OffsetTimestamp(int):
    """A timestamp in ms as an offset spec: ``reset_group_offsets`` moves to the first
    offset at or after it, where a plain int is the offset itself (kafka-python's rule)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"OffsetTimestamp({int(self)})"


ResetTarget = OffsetSpec | OffsetTimestamp | int
"""Where ``reset_group_offsets`` moves a partition: a spec, a time, or an offset."""


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partition numbers grouped by topic, sorted."""
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in sorted(set(partitions)):
        grouped[tp.topic].append(tp.partition)
    return dict(grouped)


def split_reset_targets(targets: Mapping[TopicPartition, ResetTarget],
                        ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """(partitions to look up with ListOffsets, partitions given as an offset); a target of
    another kind raises TypeError naming the partition."""
    lookups: dict[TopicPartition, int] = {}
    explicit: dict[TopicPartition, int] = {}
    for tp, spec in targets.items():
        if isinstance(spec, OffsetSpec | OffsetTimestamp):
            lookups[tp] = spec
        elif isinstance(spec, int) and not isinstance(spec, bool):
            explicit[tp] = spec
        else:
            raise TypeError(f"reset target of {tp.topic}-{tp.partition}: {spec!r} is not "
                            f"an OffsetSpec, an OffsetTimestamp or an int offset")
    return lookups, explicit


def clamp(raw: int, earliest: int, latest: int) -> int:
    """A reset target within [earliest, latest]; unknown (-1) or past the end is latest."""
    return latest if raw < 0 else min(max(raw, earliest), latest)


class ListOffsets(AdminApiHandler[TopicPartition, OffsetAndTimestamp | None]):
    """Each partition's offset for its timestamp; None when no record is that recent."""

    api_key = ApiKey.LIST_OFFSETS

    def __init__(self, timestamps: Mapping[TopicPartition, int],
                 isolation_level: int = 0) -> None:
        super().__init__(PartitionLeader())
        self.timestamps = timestamps
        self.isolation_level = isolation_level

    def build_request(self, node: int, keys: Sequence[TopicPartition]) -> Request:
        return Request(self.api_key,
                       list_offsets_request(list(keys), self.timestamps, self.isolation_level))

    def handle_response(self, node: int, keys: Sequence[TopicPartition], body: Mapping[str, Any],
                        ) -> ApiResult[TopicPartition, OffsetAndTimestamp | None]:
        outcome: ApiResult[TopicPartition, OffsetAndTimestamp | None] = ApiResult()
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["name"], part["partition_index"])
                if not outcome.error(tp, part["error_code"],
                                     f"listing offsets of {tp.topic}-{tp.partition}"):
                    offset = part["offset"]
                    outcome.complete(tp, None if offset < 0 else
                                     OffsetAndTimestamp(offset, part["timestamp"]))
        return outcome


class DeleteRecords(AdminApiHandler[TopicPartition, dict[str, int]]):
    """Each partition's answer (``partition_index``, ``low_watermark``, ``error_code``),
    refusals included: the caller raises them all together."""

    api_key = ApiKey.DELETE_RECORDS

    def __init__(self, offsets: Mapping[TopicPartition, int], timeout_ms: int,
                 leader: int | None = None) -> None:
        super().__init__(PartitionLeader() if leader is None else GivenBroker(leader))
        self.offsets = offsets
        self.timeout_ms = timeout_ms

    def build_request(self, node: int, keys: Sequence[TopicPartition]) -> Request:
        return Request(self.api_key, {
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "offset": self.offsets[TopicPartition(topic, p)]}
                for p in partitions]} for topic, partitions in by_topic(keys).items()],
            "timeout_ms": self.timeout_ms})

    def handle_response(self, node: int, keys: Sequence[TopicPartition], body: Mapping[str, Any],
                        ) -> ApiResult[TopicPartition, dict[str, int]]:
        outcome: ApiResult[TopicPartition, dict[str, int]] = ApiResult()
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["name"], part["partition_index"])
                if not outcome.routed(tp, part["error_code"],
                                      f"deleting records of {tp.topic}-{tp.partition}"):
                    outcome.complete(tp, dict(part))
        return outcome


def raise_refusals(results: Mapping[TopicPartition, Mapping[str, int]]) -> None:
    """Raise the first refused partition's error naming it (and how many more failed)."""
    failed = {tp: r["error_code"] for tp, r in results.items() if r["error_code"]}
    if failed:
        tp, code = min(failed.items())
        others = f" (and {len(failed) - 1} more partitions)" if len(failed) > 1 else ""
        raise error_for_code(code)(f"deleting records of {tp.topic}-{tp.partition}{others}")


class FetchGroupOffsets(AdminApiHandler[str, dict[TopicPartition, OffsetAndMetadata]]):
    """OffsetFetch: a group's committed offsets (all, or for ``partitions``); partitions
    without a commit are left out."""

    api_key = ApiKey.OFFSET_FETCH
    batched = False  # one group per OffsetFetch below v8

    def __init__(self, partitions: Sequence[TopicPartition] | None,
                 coordinator: int | None = None) -> None:
        super().__init__(group_lookup(coordinator))
        self.partitions = partitions

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        (group_id,) = keys
        return Request(self.api_key, offset_fetch_request(group_id, self.partitions))

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, dict[TopicPartition, OffsetAndMetadata]]:
        (group_id,) = keys
        outcome: ApiResult[str, dict[TopicPartition, OffsetAndMetadata]] = ApiResult()
        if not outcome.error(group_id, first_offset_fetch_error(body),
                             f"fetching committed offsets of group {group_id!r}"):
            outcome.complete(group_id, committed_offsets(body))
        return outcome


class CommitGroupOffsets(AdminApiHandler[str, dict[TopicPartition, type[KafkaError]]]):
    """OffsetCommit for a group without active members (generation -1):
    ``{tp: error class}`` with ``NoError`` for each partition committed."""

    api_key = ApiKey.OFFSET_COMMIT

    def __init__(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
                 coordinator: int | None = None) -> None:
        super().__init__(group_lookup(coordinator))
        self.offsets = {tp: OffsetAndMetadata(value.offset, value.metadata or "",
                                              value.leader_epoch)
                        if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
                        for tp, value in sorted(offsets.items())}

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        (group_id,) = keys
        return Request(self.api_key, offset_commit_request(group_id, -1, "", None,
                                                           self.offsets))

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, dict[TopicPartition, type[KafkaError]]]:
        (group_id,) = keys
        codes = {TopicPartition(topic["name"], part["partition_index"]): part["error_code"]
                 for topic in body["topics"] for part in topic["partitions"]}
        outcome: ApiResult[str, dict[TopicPartition, type[KafkaError]]] = ApiResult()
        context = f"committing offsets of group {group_id!r}"
        if not any(outcome.routed(group_id, code, context) for code in codes.values()):
            outcome.complete(group_id, {tp: NoError if not code else error_for_code(code)
                                        for tp, code in codes.items()})
        return outcome


class DeleteGroupOffsets(AdminApiHandler[str, dict[TopicPartition, type[KafkaError]]]):
    """OffsetDelete (KIP-496): ``{tp: error class}``, ``NoError`` for each one deleted."""

    api_key = ApiKey.OFFSET_DELETE

    def __init__(self, partitions: Sequence[TopicPartition],
                 coordinator: int | None = None) -> None:
        super().__init__(group_lookup(coordinator))
        self.partitions = partitions

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        (group_id,) = keys
        return Request(self.api_key, {"group_id": group_id, "topics": [
            {"name": topic, "partitions": [{"partition_index": p} for p in partitions]}
            for topic, partitions in by_topic(self.partitions).items()]})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, dict[TopicPartition, type[KafkaError]]]:
        (group_id,) = keys
        outcome: ApiResult[str, dict[TopicPartition, type[KafkaError]]] = ApiResult()
        if not outcome.error(group_id, body["error_code"],
                             f"deleting offsets of group {group_id!r}"):
            outcome.complete(group_id, {
                TopicPartition(topic["name"], part["partition_index"]):
                NoError if not part["error_code"] else error_for_code(part["error_code"])
                for topic in body["topics"] for part in topic["partitions"]})
        return outcome
