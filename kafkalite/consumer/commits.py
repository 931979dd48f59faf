"""Committed offsets: OffsetCommit requests and what their answers mean for the member,
OffsetFetch with retries, the auto-commit timer, and async commit results.

Commits carry the generation and member id. A member that lost its place (evicted, or the
group moved to a new generation without it) still sends its last generation, so the
coordinator, not a guess, fences it; the refusal surfaces as :class:`CommitFailedError`.
"""

from __future__ import annotations

import enum
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.client.coordinator import backoff, find_coordinator, remaining
from kafkalite.errors import CommitFailedError, KafkaError, ProtocolDecodeError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_for_code,
)
from kafkalite.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

COORDINATOR_ERRORS = (NotCoordinatorError.errno, CoordinatorNotAvailableError.errno)
"""Answers meaning "ask the group's coordinator again, it moved or is not up"."""
FENCING_ERRORS = (IllegalGenerationError.errno, UnknownMemberIdError.errno,
                  FencedInstanceIdError.errno)
"""Answers meaning "the group no longer knows this member or its generation"."""

Offsets = Mapping[TopicPartition, OffsetAndMetadata]
CommitCallback = Callable[[Offsets, BaseException | None], None]


# -- OffsetCommit --------------------------------------------------------------------------------

def offset_commit_request(group_id: str, generation: int, member_id: str,
                          instance_id: str | None, offsets: Offsets) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for tp, meta in offsets.items():
        by_topic[tp.topic].append({
            "partition_index": tp.partition, "committed_offset": meta.offset,
            "committed_leader_epoch": meta.leader_epoch,
            "committed_metadata": meta.metadata})
    return {"group_id": group_id, "generation_id_or_member_epoch": generation,
            "member_id": member_id, "group_instance_id": instance_id,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}


class Verdict(enum.Enum):
    OK = "ok"
    FENCED = "fenced"
    """The member's generation or id is gone: it must rejoin (and forget its generation)."""
    REBALANCING = "rebalancing"
    """The group is rebalancing: the member must rejoin."""
    COORDINATOR_MOVED = "coordinator_moved"
    OTHER = "other"


@dataclass(frozen=True)
class CommitOutcome:
    verdict: Verdict
    error: KafkaError | None = None
    code: int = 0


def judge_commit(response: Mapping[str, Any], group_id: str, generation: int) -> CommitOutcome:
    """What an OffsetCommit answer means: the verdict for the membership and the exception
    the application sees (None when every partition was committed)."""
    failed = [(TopicPartition(t["name"], p["partition_index"]), p["error_code"])
              for t in response["topics"] for p in t["partitions"] if p["error_code"]]
    if not failed:
        return CommitOutcome(Verdict.OK)
    code = failed[0][1]
    error = error_for_code(code)
    if code in FENCING_ERRORS:
        return CommitOutcome(Verdict.FENCED, CommitFailedError(
            f"group {group_id!r}: the coordinator refused the commit for generation "
            f"{generation} ({error.__name__}): the group has moved on to a newer "
            "generation without this member, so its partitions may now belong to another "
            "member; poll() rejoins the group"), code)
    if code == RebalanceInProgressError.errno:
        return CommitOutcome(Verdict.REBALANCING, CommitFailedError(
            f"group {group_id!r} is rebalancing; the commit for generation "
            f"{generation} was refused, and the partitions may move to another member"), code)
    verdict = Verdict.COORDINATOR_MOVED if code in COORDINATOR_ERRORS else Verdict.OTHER
    return CommitOutcome(verdict, error(
        f"committing offsets of {[tp for tp, _ in failed]} for group {group_id!r}"), code)


# -- the auto-commit timer and async results -----------------------------------------------------

class AutoCommitTimer:
    """``auto_commit_interval_ms`` between automatic commits of the consumed positions."""

    def __init__(self, enabled: bool, interval_ms: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = enabled
        self._interval = interval_ms / 1000
        self._clock = clock
        self._next = clock() + self._interval

    def due(self) -> bool:
        """True (and the next one scheduled) when an auto commit should go out now."""
        if not self.enabled or self._clock() < self._next:
            return False
        self.reset()
        return True

    def reset(self) -> None:
        """The next auto commit is a full interval from now (after a new assignment)."""
        self._next = self._clock() + self._interval


class CommitResults:
    """Finished async commits, handed to their callbacks on the application's thread (the I/O
    thread only queues them), in the order they finished."""

    def __init__(self, group_id: str) -> None:
        self._group_id = group_id
        self._done: deque[tuple[CommitCallback | None, Offsets, BaseException | None]] = deque()

    def add(self, callback: CommitCallback | None, offsets: Offsets,
            error: BaseException | None) -> None:
        self._done.append((callback, offsets, error))

    def run(self) -> None:
        while self._done:
            callback, offsets, error = self._done.popleft()
            if error is not None:
                log.warning("group %r: async commit failed: %s", self._group_id, error)
            if callback is not None:
                callback(offsets, error)


# -- OffsetFetch ---------------------------------------------------------------------------------

def offset_fetch_request(group_id: str,
                         partitions: Iterable[TopicPartition] | None) -> dict[str, Any]:
    """OffsetFetch's body; ``partitions=None`` asks for every partition the group committed.
    It holds both forms (one group up to v7, a list of groups from v8); the encoder takes
    the fields of the version the connection negotiated."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in partitions:
            by_topic[tp.topic].append(tp.partition)
        topics = [{"name": t, "partition_indexes": sorted(p)} for t, p in by_topic.items()]
    return {"group_id": group_id, "topics": topics,
            "groups": [{"group_id": group_id, "topics": topics}]}


def _only_group(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The answer for the one group asked about (v8+ answers in a list of groups)."""
    groups = body.get("groups")
    return groups[0] if groups else body


def first_offset_fetch_error(body: Mapping[str, Any]) -> int:
    """The group-level error code, else the first partition's, else 0."""
    group = _only_group(body)
    codes = [group.get("error_code", 0)] + [
        part["error_code"] for topic in group["topics"] for part in topic["partitions"]]
    return next((c for c in codes if c), 0)


def committed_offsets(body: Mapping[str, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    """The offsets of an error-free OffsetFetch answer; partitions without a commit left out."""
    return {
        TopicPartition(topic["name"], part["partition_index"]): OffsetAndMetadata(
            part["committed_offset"], part["metadata"] or "", part["committed_leader_epoch"])
        for topic in _only_group(body)["topics"] for part in topic["partitions"]
        if part["committed_offset"] >= 0
    }


def _every_partition(client: KafkaClient, deadline: float) -> list[TopicPartition]:
    """Every partition of every non-internal topic in the cluster, from fresh metadata."""
    metadata, cluster = client.metadata, client.cluster
    previous = metadata.all_topics
    metadata.all_topics = True
    try:
        metadata.await_update(metadata.request_update(), remaining(deadline))
    finally:
        metadata.all_topics = previous
    return [TopicPartition(topic, p) for topic in sorted(cluster.topics(exclude_internal=True))
            for p in cluster.partitions_for_topic(topic) or ()]


def fetch_committed_offsets(
    client: KafkaClient, group_id: str, partitions: Iterable[TopicPartition] | None,
    deadline: float, coordinator: int | None = None,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The group's committed offsets (OffsetFetch, retried until the deadline);
    ``partitions=None`` asks for all of them. Partitions without a commit are left out.

    Some brokers (Tansu) answer an OffsetFetch for all partitions (null topics, v2-v7) without
    the topics array Kafka's format requires. Asking again is pointless, so such an answer is
    followed by one request naming every partition in the cluster.
    """
    wanted = None if partitions is None else list(partitions)
    while True:
        node = coordinator if coordinator is not None else \
            find_coordinator(client, group_id, deadline)
        try:
            body = client.send(node, ApiKey.OFFSET_FETCH,
                               offset_fetch_request(group_id, wanted)).get(remaining(deadline))
        except KafkaError as exc:
            if wanted is None and isinstance(exc.__cause__, ProtocolDecodeError):
                log.info("group %r: the coordinator's answer for all committed offsets was "
                         "malformed (%s); asking for every partition instead", group_id, exc)
                wanted = _every_partition(client, deadline)
                continue
            if not exc.retriable:
                raise
            coordinator = None
            backoff(client, deadline)
            continue
        code = first_offset_fetch_error(body)
        if code:
            error = error_for_code(code)
            if not error.retriable:
                raise error(f"fetching committed offsets of group {group_id!r}")
            if code in COORDINATOR_ERRORS:
                coordinator = None
            backoff(client, deadline)
            continue
        return committed_offsets(body)

