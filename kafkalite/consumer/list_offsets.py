"""Offset lookups by time (ListOffsets), blocking, for the consumer and the AdminClient.

The consumer resets positions with it (earliest/latest), ``offsets_for_times`` and
``beginning_offsets`` / ``end_offsets`` use it, and the AdminClient computes group lag with
it. Requests go to each partition's leader; leadership errors refresh metadata and retry until
the deadline.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.client.future import Future
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import UnknownTopicOrPartitionError, error_for_code
from kafkalite.structs import OffsetAndTimestamp, TopicPartition

EARLIEST = -2
LATEST = -1
STRATEGY_TIMESTAMPS = {"earliest": EARLIEST, "latest": LATEST}


def await_leaders(client: KafkaClient, partitions: set[TopicPartition],
                  deadline: float) -> dict[TopicPartition, int]:
    """The leader of each partition, refreshing metadata until all are known or time is up.

    A topic the broker does not know raises UnknownTopicOrPartitionError naming it; a
    partition beyond the topic's count too.
    """
    metadata, cluster = client.metadata, client.cluster
    metadata.add_topics({tp.topic for tp in partitions})
    while True:
        leaders = {tp: cluster.leader_for(tp) for tp in partitions}
        missing = {tp for tp, leader in leaders.items() if leader is None}
        if not missing:
            return {tp: leader for tp, leader in leaders.items() if leader is not None}
        for tp in missing:
            known = cluster.partitions_for_topic(tp.topic)
            if known is not None and tp.partition not in known:
                raise UnknownTopicOrPartitionError(
                    f"{tp}: topic {tp.topic!r} has {len(known)} partitions")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            unknown = {tp.topic for tp in missing} & cluster.unknown_topics()
            if unknown:
                raise UnknownTopicOrPartitionError(f"topics {sorted(unknown)}")
            raise client.timeout_error(f"no leader known for {sorted(missing)}")
        version = metadata.request_update()
        try:
            metadata.await_update(version, min(remaining, 1.0))
        except KafkaTimeoutError:
            continue


def list_offsets(client: KafkaClient, timestamps: Mapping[TopicPartition, int], *,
                 isolation_level: int = 0, timeout: float = 60.0,
                 ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
    """For each partition, the offset for its timestamp (EARLIEST / LATEST or a time in ms).

    None when no record is that recent (Kafka answers offset -1 for a time past the end).
    """
    deadline = time.monotonic() + timeout
    backoff = client.config["retry_backoff_ms"] / 1000
    pending = dict(timestamps)
    results: dict[TopicPartition, OffsetAndTimestamp | None] = {}
    while pending:
        leaders = await_leaders(client, set(pending), deadline)
        by_node: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp, node in leaders.items():
            by_node[node].append(tp)
        futures = [(tps, client.send(node, ApiKey.LIST_OFFSETS,
                                     list_offsets_request(tps, pending, isolation_level)))
                   for node, tps in by_node.items()]
        retry = False
        for tps, future in futures:
            retry |= _collect(future, tps, deadline, pending, results, client)
        if retry and pending:
            if time.monotonic() + backoff > deadline:
                raise client.timeout_error(f"ListOffsets did not finish for {sorted(pending)}")
            time.sleep(backoff)
    return results


def list_offsets_request(tps: list[TopicPartition], timestamps: Mapping[TopicPartition, int],
                         isolation_level: int) -> dict[str, Any]:
    """ListOffsets' body asking for the offset of each partition's timestamp."""
    by_topic: dict[str, list[dict[str, int]]] = defaultdict(list)
    for tp in tps:
        by_topic[tp.topic].append({"partition_index": tp.partition,
                                   "current_leader_epoch": -1,
                                   "timestamp": timestamps[tp]})
    return {"replica_id": -1, "isolation_level": isolation_level,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}


def read_list_offsets(body: dict[str, Any], pending: dict[TopicPartition, int]
                      ) -> tuple[dict[TopicPartition, tuple[int, int]], bool, bool]:
    """A ListOffsets answer's (offset, timestamp) per partition still ``pending`` (those are
    removed from it), whether a partition must be asked again, and whether one of those
    errors means the metadata is stale; a non-retriable error is raised, naming its
    partition. Shared by the threaded and the asyncio consumers."""
    found: dict[TopicPartition, tuple[int, int]] = {}
    retry = stale = False
    for topic in body["topics"]:
        for part in topic["partitions"]:
            tp = TopicPartition(topic["name"], part["partition_index"])
            if tp not in pending:
                continue
            code = part["error_code"]
            if code:
                error = error_for_code(code)
                if not error.retriable:
                    raise error(f"ListOffsets for {tp}")
                stale = stale or error.invalid_metadata
                retry = True
                continue
            del pending[tp]
            found[tp] = (part["offset"], part["timestamp"])
    return found, retry, stale


def _collect(future: Future[dict[str, Any]], tps: list[TopicPartition], deadline: float,
             pending: dict[TopicPartition, int],
             results: dict[TopicPartition, OffsetAndTimestamp | None],
             client: KafkaClient) -> bool:
    """Move answered partitions from ``pending`` to ``results``; True when a retry is due."""
    try:
        body = future.get(max(deadline - time.monotonic(), 0.0))
    except KafkaError as exc:
        if not exc.retriable:
            raise
        client.metadata.request_update()
        return True
    found, retry, stale = read_list_offsets(body, pending)
    if stale:
        client.metadata.request_update()
    for tp, (offset, timestamp) in found.items():
        results[tp] = None if offset < 0 else OffsetAndTimestamp(offset, timestamp)
    return retry or any(tp in pending for tp in tps)
