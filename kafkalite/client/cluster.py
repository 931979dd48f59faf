"""The client's cache of cluster metadata: brokers, topics, partitions and their leaders.

Thread-safety: the client's I/O thread calls :meth:`ClusterMetadata.update_from_metadata`
while user threads (``send``, partitioners, assignors) read. Every update builds a new
immutable :class:`_Snapshot` and swaps one reference, which is atomic in Python; each query
reads that reference once, so a reader sees either the old or the new cluster, never a mix.
The few mutable counters (version, refresh flags) are guarded by a lock.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.errors import (
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kafkalite.protocol.primitives import ZERO_UUID
from kafkalite.structs import BrokerMetadata, PartitionMetadata, TopicPartition

log = logging.getLogger(__name__)

ClusterListener = Callable[["ClusterMetadata"], None]


@dataclass(frozen=True)
class _Snapshot:
    """One Metadata response, indexed for the queries clients make on every record."""

    brokers: Mapping[int, BrokerMetadata] = field(default_factory=dict)
    partitions: Mapping[str, Mapping[int, PartitionMetadata]] = field(default_factory=dict)
    partition_ids: Mapping[str, frozenset[int]] = field(default_factory=dict)
    available: Mapping[str, frozenset[int]] = field(default_factory=dict)
    internal_topics: frozenset[str] = frozenset()
    unauthorized_topics: frozenset[str] = frozenset()
    unknown_topics: frozenset[str] = frozenset()
    invalid_topics: frozenset[str] = frozenset()
    cluster_id: str | None = None
    controller_id: int = -1
    topic_ids: Mapping[str, uuid.UUID] = field(default_factory=dict)
    """Metadata v10+ names each topic's id (share groups name topics by id)."""
    topics_by_id: Mapping[uuid.UUID, str] = field(default_factory=dict)




def _required(entry: Mapping[str, Any], name: str, where: str) -> Any:
    try:
        return entry[name]
    except (KeyError, TypeError):
        raise ProtocolDecodeError(f"Metadata response: {where} has no field {name!r}") from None


def _parse_partition(topic: str, entry: Mapping[str, Any]) -> PartitionMetadata:
    where = f"a partition of topic {topic!r}"
    return PartitionMetadata(
        topic=topic,
        partition=_required(entry, "partition_index", where),
        leader=_required(entry, "leader_id", where),
        leader_epoch=entry.get("leader_epoch", -1),
        replicas=tuple(_required(entry, "replica_nodes", where)),
        isr=tuple(_required(entry, "isr_nodes", where)),
        error=entry.get("error_code", 0),
        offline_replicas=tuple(entry.get("offline_replicas") or ()),
    )


def _parse_snapshot(body: Mapping[str, Any]) -> tuple[_Snapshot, bool]:
    """Build a snapshot; the flag says some topic had a transient error worth a retry."""
    brokers = {}
    for entry in _required(body, "brokers", "the response"):
        node_id = _required(entry, "node_id", "a broker")
        brokers[node_id] = BrokerMetadata(
            node_id,
            _required(entry, "host", "a broker"),
            _required(entry, "port", "a broker"),
            entry.get("rack"),
        )
    partitions: dict[str, dict[int, PartitionMetadata]] = {}
    internal, unauthorized, unknown, invalid = set(), set(), set(), set()
    topic_ids: dict[str, uuid.UUID] = {}
    retry_soon = False
    for entry in _required(body, "topics", "the response"):
        name = _required(entry, "name", "a topic")
        error = entry.get("error_code", 0)
        if error == 0 and entry.get("topic_id", ZERO_UUID) != ZERO_UUID:
            topic_ids[name] = entry["topic_id"]
        if error == 0:
            parsed = (_parse_partition(name, p) for p in _required(entry, "partitions", "a topic"))
            partitions[name] = {p.partition: p for p in parsed}
            if entry.get("is_internal", False):
                internal.add(name)
        elif error == TopicAuthorizationFailedError.errno:
            unauthorized.add(name)
        elif error == UnknownTopicOrPartitionError.errno:
            unknown.add(name)
        elif error == InvalidTopicError.errno:
            invalid.add(name)
        else:  # LEADER_NOT_AVAILABLE while a topic is being created, and the like
            retry_soon = True
    available = {
        topic: frozenset(p for p, meta in by_id.items() if meta.leader >= 0)
        for topic, by_id in partitions.items()
    }
    snapshot = _Snapshot(
        brokers=brokers,
        partitions=partitions,
        partition_ids={topic: frozenset(by_id) for topic, by_id in partitions.items()},
        available=available,
        internal_topics=frozenset(internal),
        unauthorized_topics=frozenset(unauthorized),
        unknown_topics=frozenset(unknown),
        invalid_topics=frozenset(invalid),
        cluster_id=body.get("cluster_id"),
        controller_id=body.get("controller_id", -1),
        topic_ids=topic_ids,
        topics_by_id={id_: name for name, id_ in topic_ids.items()},
    )
    return snapshot, retry_soon


class ClusterMetadata:
    """What the client knows about the cluster, refreshed from Metadata responses.

    Each update replaces the whole view (the client asks for every topic it needs), bumps
    :attr:`version` and calls the listeners, which is how the sticky partitioner and the
    consumer notice a partition count change.
    """

    def __init__(self) -> None:
        self._snapshot = _Snapshot()
        self._lock = threading.Lock()
        self._listeners: list[ClusterListener] = []
        self._version = 0
        self._update_requested = True
        self._last_refresh_ms = -1

    # -- refresh bookkeeping -------------------------------------------------------------

    @property
    def version(self) -> int:
        """Incremented by every successful update; wait for it to pass a value to see news."""
        return self._version

    @property
    def last_successful_refresh_ms(self) -> int:
        """Time of the last update, -1 before the first one."""
        return self._last_refresh_ms

    def request_update(self) -> int:
        """Ask for a refresh as soon as possible; returns the version to wait past."""
        with self._lock:
            self._update_requested = True
            return self._version

    def needs_update(self, now_ms: int, metadata_max_age_ms: int) -> bool:
        """True when a refresh was requested or the data is older than ``metadata_max_age_ms``."""
        with self._lock:
            if self._update_requested or self._last_refresh_ms < 0:
                return True
            return now_ms - self._last_refresh_ms >= metadata_max_age_ms

    def add_listener(self, listener: ClusterListener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: ClusterListener) -> None:
        with self._lock:
            self._listeners.remove(listener)

    def update_from_metadata(self, body: Mapping[str, Any], now_ms: int) -> None:
        """Replace the view with a decoded Metadata response (snake_case field names).

        Topics whose error is transient (for example LEADER_NOT_AVAILABLE while being created)
        are left out and another refresh is requested. A listener that raises is logged and
        does not stop the others: this runs on the client's I/O thread.
        """
        snapshot, retry_soon = _parse_snapshot(body)
        with self._lock:
            self._snapshot = snapshot
            self._version += 1
            self._update_requested = retry_soon
            self._last_refresh_ms = now_ms
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(self)
            except Exception:
                log.exception("cluster metadata listener %r failed", listener)

    # -- queries -------------------------------------------------------------------------

    @property
    def cluster_id(self) -> str | None:
        return self._snapshot.cluster_id

    @property
    def controller_id(self) -> int:
        """The controller's node id, -1 when unknown."""
        return self._snapshot.controller_id

    def brokers(self) -> set[BrokerMetadata]:
        return set(self._snapshot.brokers.values())

    def broker(self, node_id: int) -> BrokerMetadata | None:
        return self._snapshot.brokers.get(node_id)

    def topics(self, exclude_internal: bool = False) -> set[str]:
        """Topics with usable partition metadata."""
        snapshot = self._snapshot
        if exclude_internal:
            return set(snapshot.partitions) - snapshot.internal_topics
        return set(snapshot.partitions)

    def unauthorized_topics(self) -> set[str]:
        return set(self._snapshot.unauthorized_topics)

    def unknown_topics(self) -> set[str]:
        return set(self._snapshot.unknown_topics)

    def invalid_topics(self) -> set[str]:
        return set(self._snapshot.invalid_topics)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id (None: unknown, or the broker answered Metadata below v10)."""
        return self._snapshot.topic_ids.get(topic)

    def topic_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self._snapshot.topics_by_id.get(topic_id)

    def fetch_topic(self, topic: str, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        """One topic of a Fetch request: by name up to v12, by id from v13 (the zero id
        while the metadata has none: the broker answers UNKNOWN_TOPIC_ID, which refreshes
        the metadata)."""
        return {"topic": topic, "topic_id": self.topic_id(topic) or ZERO_UUID,
                "partitions": partitions}

    def fetched_topic(self, response_topic: dict[str, Any]) -> str | None:
        """The name of a Fetch response's topic: given up to v12, looked up by id from v13
        (None: an id the metadata no longer knows, fetched again once it does)."""
        return response_topic["topic"] or self.topic_for_id(response_topic["topic_id"])

    def partitions_for_topic(self, topic: str) -> frozenset[int] | None:
        """All partition ids of ``topic``, or None when the topic has no metadata.

        Frozen (shared, not copied): producers call this for every record.
        """
        return self._snapshot.partition_ids.get(topic)

    def available_partitions_for_topic(self, topic: str) -> frozenset[int]:
        """Partition ids of ``topic`` that currently have a leader (empty when unknown)."""
        return self._snapshot.available.get(topic, frozenset())

    def partition_metadata(self, tp: TopicPartition) -> PartitionMetadata | None:
        by_id = self._snapshot.partitions.get(tp.topic)
        return None if by_id is None else by_id.get(tp.partition)

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The leader's node id, or None when the partition is unknown or has no leader."""
        meta = self.partition_metadata(tp)
        return None if meta is None or meta.leader < 0 else meta.leader

    def leader_epoch_for(self, tp: TopicPartition) -> int | None:
        """The leader epoch (-1 from brokers too old to send it), None when unknown."""
        meta = self.partition_metadata(tp)
        return None if meta is None else meta.leader_epoch

    def partitions_for_broker(self, node_id: int) -> set[TopicPartition]:
        """Partitions ``node_id`` leads: where a producer sends, what a fetch asks for."""
        return {
            meta.topic_partition
            for by_id in self._snapshot.partitions.values()
            for meta in by_id.values()
            if meta.leader == node_id
        }

    def __repr__(self) -> str:
        snapshot = self._snapshot
        return (
            f"ClusterMetadata(version={self._version}, brokers={len(snapshot.brokers)}, "
            f"topics={len(snapshot.partitions)})"
        )
