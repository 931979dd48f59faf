"""DescribeTopicPartitions (75): topics and their partitions from this broker's metadata
cache, a page at a time, as Kafka's ``DescribeTopicPartitionsRequestHandler`` answers.

Topics are taken in name order from the request's ``cursor`` on (its topic from its
partition index, later topics from their first partition) until
``min(response_partition_limit, max.request.partition.size.limit)`` partitions (at least
one) are described; the answer's ``next_cursor`` names where the next page starts, or is
null when nothing is left. A topic is described whole or up to the limit, never skipped.

Authorization, as Kafka's: Describe on each topic. Topics named in the request that the
principal may not describe answer TOPIC_AUTHORIZATION_FAILED (with no id, and whether they
exist is not told); when every topic is asked for (an empty list), they are left out.
Topics named that do not exist answer UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for
an illegal name). A cursor whose topic is not among those named, or whose partition index
is negative, is an invalid request: every topic named answers INVALID_REQUEST.

Partitions carry no error: one without a live leader has leader -1, as in Kafka. This
broker has no eligible leader replicas (KIP-966), so both ELR lists are empty.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import (
    InvalidRequestError,
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster.authorized_operations import authorized_operations
from kafkalite_server.cluster.topics import INTERNAL_TOPICS, validate_topic_name
from kafkalite_server.handlers.metadata import describe_partition
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.acls import ResourceType
from kafkalite_server.security.api_checks import DESCRIBE_TOPICS, declares
from kafkalite_server.topic_ids import ZERO

NAMED = replace(DESCRIBE_TOPICS, when="topics named")
EVERY = replace(DESCRIBE_TOPICS, when="every topic asked for", filters=True)


@declares(NAMED, EVERY)
async def handle_describe_topic_partitions(ctx: RequestContext,
                                           body: dict[str, Any]) -> dict[str, Any]:
    cache = ctx.broker.metadata_cache
    cursor = body["cursor"]
    start_topic = "" if cursor is None else cursor["topic_name"]
    named = [topic["name"] for topic in body["topics"]]
    every = not named
    candidates = sorted({name for name in (cache.topic_names() if every else named)
                         if name >= start_topic})
    if cursor is not None and ((not every and start_topic not in candidates)
                               or cursor["partition_index"] < 0):
        return {"throttle_time_ms": 0, "next_cursor": None, "topics": [
            _topic_error(name, InvalidRequestError.errno) for name in named]}
    denied = (EVERY if every else NAMED).denied(ctx, candidates)
    remaining = max(min(body["response_partition_limit"],
                        ctx.broker.config.max_request_partition_size_limit), 1)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in candidates:
        if name in denied:
            continue
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        states = cache.partitions_of(name)
        if states is None:
            if not every:
                topics.append(_topic_error(name, _missing_error(name)))
            continue
        first = cursor["partition_index"] if cursor is not None and name == start_topic else 0
        page = states[first:first + remaining]
        is_offline = ctx.broker.replica_manager.is_offline
        topics.append({
            "error_code": 0, "name": name, "topic_id": cache.topic_id(name),
            "is_internal": name in INTERNAL_TOPICS,
            "partitions": [{**describe_partition(state, is_offline(name, state.partition)),
                            "error_code": 0, "eligible_leader_replicas": [],
                            "last_known_elr": []} for state in page],
            "topic_authorized_operations": authorized_operations(ctx.authorize,
                                                                 ResourceType.TOPIC, name)})
        if first + len(page) < len(states):
            next_cursor = {"topic_name": name, "partition_index": first + len(page)}
            break
        remaining -= len(page)
    if not every:
        topics.extend(_topic_error(name, TopicAuthorizationFailedError.errno)
                      for name in candidates if name in denied)
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}


def _missing_error(name: str) -> int:
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return InvalidTopicError.errno
    return UnknownTopicOrPartitionError.errno


def _topic_error(name: str, errno: int) -> dict[str, Any]:
    return {"error_code": errno, "name": name, "topic_id": ZERO,
            "is_internal": name in INTERNAL_TOPICS, "partitions": []}
