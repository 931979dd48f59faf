"""ListOffsets (2) and OffsetForLeaderEpoch (23).

ListOffsets v0 is Kafka's legacy form, still served by Kafka 2.x and 3.x (KafkaJS asks it):
up to ``max_num_offsets`` offsets per partition, newest first, in ``old_style_offsets``.
v8 and v9 (KIP-1005) ask for -4, the earliest offset kept locally, and -5, the latest offset
in tiered storage: this broker has no tiered storage, so it answers them as a Kafka broker
with ``remote.log.storage.system.enable=false`` does (-4 is the log start offset, -5 no
offset).

Both need Describe on each topic (the others' partitions answer TOPIC_AUTHORIZATION_FAILED)
and, from a replica (``replica_id`` >= 0, as followers send OffsetForLeaderEpoch),
ClusterAction on the Cluster (every partition answers CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.log.log import wall_clock_ms
from kafkalite_server.replication.partition import Partition
from kafkalite_server.security.api_checks import (
    DESCRIBE_TOPICS,
    REPLICA_CLUSTER_ACTION,
    declares,
)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
"""ListOffsets v7+ (KIP-734): the record with the largest timestamp."""
EARLIEST_LOCAL = -4
"""ListOffsets v8+ (KIP-1005): the first offset in the broker's local log."""
LATEST_TIERED = -5
"""ListOffsets v9+ (KIP-1005): the last offset copied to tiered storage."""

CONSUMER_DESCRIBE = replace(DESCRIBE_TOPICS, when="from a client")


def _refused(ctx: RequestContext, body: dict[str, Any],
             topic_field: str) -> dict[str, type[BrokerResponseError]]:
    """The topics this request may not ask about, with the error their partitions answer."""
    names = [topic[topic_field] for topic in body["topics"]]
    if body["replica_id"] >= 0:
        if REPLICA_CLUSTER_ACTION.allows(ctx):
            return {}
        return dict.fromkeys(names, REPLICA_CLUSTER_ACTION.error)
    return dict.fromkeys(CONSUMER_DESCRIBE.denied(ctx, names), CONSUMER_DESCRIBE.error)


@declares(CONSUMER_DESCRIBE, REPLICA_CLUSTER_ACTION)
async def handle_list_offsets(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    replicas = ctx.broker.replica_manager
    refused = _refused(ctx, body, "name")
    topics = []
    for topic in body["topics"]:
        partitions = []
        for request in topic["partitions"]:
            index = request["partition_index"]
            try:
                if topic["name"] in refused:
                    raise refused[topic["name"]]()
                partition = replicas.leader_partition(topic["name"], index)
                partition.check_leader_epoch(request["current_leader_epoch"])
                upper_bound = replicas.read_upper_bound(partition,
                                                        body.get("isolation_level", 0))
                if ctx.api_version == 0:
                    partitions.append({"partition_index": index, "error_code": 0,
                                       "old_style_offsets": _legacy_offsets(
                                           partition, request["timestamp"], upper_bound,
                                           request["max_num_offsets"])})
                    continue
                offset, timestamp, epoch = _lookup(partition, request["timestamp"],
                                                   upper_bound)
            except BrokerResponseError as exc:
                partitions.append({"partition_index": index, "error_code": exc.errno,
                                   "old_style_offsets": [], "timestamp": -1, "offset": -1,
                                   "leader_epoch": -1})
                continue
            partitions.append({"partition_index": index, "error_code": 0,
                               "timestamp": timestamp, "offset": offset, "leader_epoch": epoch})
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _lookup(partition: Partition, timestamp: int, upper_bound: int) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch); -1 latest is ``upper_bound`` (what the consumer
    may read up to: the high watermark, or the last stable offset for read_committed),
    -2 earliest the log start offset, -3 the first record with the largest timestamp. With
    no tiered storage the whole log is local (-4 is -2) and nothing is tiered (-5 finds no
    offset, epoch -1)."""
    log = partition.log
    if timestamp == LATEST:
        return upper_bound, -1, partition.leader_epoch
    if timestamp == LATEST_TIERED:
        return -1, -1, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1, _epoch_at(partition, log.log_start_offset)
    found = (log.offset_of_max_timestamp() if timestamp == MAX_TIMESTAMP
             else log.offset_for_timestamp(timestamp))
    if found is None or found[0] >= upper_bound:
        return -1, -1, -1
    offset, stamp = found
    return offset, stamp, _epoch_at(partition, offset)


def _legacy_offsets(partition: Partition, timestamp: int, upper_bound: int,
                    max_num_offsets: int) -> list[int]:
    """ListOffsets v0, as Kafka's legacy lookup answers it: the log's candidate offsets are
    each segment's base (stamped with the segment's largest timestamp) and, when the active
    segment holds data, ``upper_bound`` (stamped now). -1 starts from the newest, -2 from
    the oldest, a timestamp from the newest candidate stamped at or before it; the answer
    walks back from there, newest first, at most ``max_num_offsets`` long. Offsets a
    consumer may not read yet are folded into ``upper_bound``."""
    log = partition.log
    segments = log.segments
    candidates = [max(segment.base_offset, log.log_start_offset) for segment in segments]
    if log.active_segment.size > 0:
        candidates.append(max(upper_bound, log.log_start_offset))
    if timestamp == LATEST:
        start = len(candidates) - 1
    elif timestamp == EARLIEST:
        start = 0
    else:
        stamps = [segment.largest_timestamp for segment in segments]
        if len(candidates) > len(stamps):
            stamps.append(wall_clock_ms())
        start = next((i for i in reversed(range(len(stamps))) if stamps[i] <= timestamp), -1)
    offsets = candidates[start::-1] if start >= 0 else []
    if any(offset > upper_bound for offset in offsets):
        offsets = [upper_bound] + [offset for offset in offsets if offset <= upper_bound]
    return offsets[:max(max_num_offsets, 0)]


def _epoch_at(partition: Partition, offset: int) -> int:
    """The leader epoch that wrote ``offset`` (the newest epoch starting at or before it)."""
    epoch = -1
    for entry_epoch, start in partition.log.leader_epoch_cache.entries:
        if start > offset:
            break
        epoch = entry_epoch
    return epoch


@declares(CONSUMER_DESCRIBE, REPLICA_CLUSTER_ACTION)
async def handle_offset_for_leader_epoch(ctx: RequestContext,
                                         body: dict[str, Any]) -> dict[str, Any]:
    replicas = ctx.broker.replica_manager
    refused = _refused(ctx, body, "topic")
    topics = []
    for topic in body["topics"]:
        partitions = []
        for request in topic["partitions"]:
            index = request["partition"]
            try:
                if topic["topic"] in refused:
                    raise refused[topic["topic"]]()
                partition = replicas.leader_partition(topic["topic"], index)
                partition.check_leader_epoch(request["current_leader_epoch"])
                epoch, end_offset = partition.log.end_offset_for_epoch(request["leader_epoch"])
            except BrokerResponseError as exc:
                partitions.append({"error_code": exc.errno, "partition": index,
                                   "leader_epoch": -1, "end_offset": -1})
                continue
            partitions.append({"error_code": 0, "partition": index, "leader_epoch": epoch,
                               "end_offset": end_offset})
        topics.append({"topic": topic["topic"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
