"""Fetch (1), versions 4-11: whole batches below the high watermark, sent with sendfile.

Every requested partition is in the response, in request order (kafka-python drops a
full-fetch response that leaves one out). ``max_bytes`` caps the response and
``partition_max_bytes`` each partition, except that the first batch found is always sent
whole so a large batch cannot stall a consumer. When fewer than ``min_bytes`` are ready the
request waits in the fetch purgatory until an append makes enough readable or
``max_wait_ms`` passes, then reads again.
"""

from __future__ import annotations

import logging
from typing import Any

from kafkalite.protocol.errors import BrokerResponseError, UnknownServerError
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.replication.delayed import DelayedFetch, FetchPosition
from kafkalite_server.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

_NO_RECORDS = b""


async def handle_fetch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    replicas = ctx.broker.replica_manager
    responses, total, failed = _read_all(replicas, body)
    if not failed and total < body["min_bytes"] and body["max_wait_ms"] > 0:
        positions = [
            FetchPosition((topic["topic"], p["partition"]), p["fetch_offset"],
                          p["partition_max_bytes"])
            for topic in body["topics"] for p in topic["partitions"]
        ]
        operation = DelayedFetch(body["max_wait_ms"], body["min_bytes"], positions,
                                 replicas.partitions.get)
        await replicas.fetch_purgatory.wait(operation, {position.key for position in positions})
        responses, _total, _failed = _read_all(replicas, body)
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


def _read_all(replicas: ReplicaManager,
              body: dict[str, Any]) -> tuple[list[dict[str, Any]], int, bool]:
    """(response topics, record bytes included, whether any partition has an error)."""
    remaining = body["max_bytes"]
    total = 0
    failed = False
    responses = []
    for topic in body["topics"]:
        name = topic["topic"]
        partitions = []
        for request in topic["partitions"]:
            entry = _read_partition(replicas, name, request,
                                    min(remaining, request["partition_max_bytes"]),
                                    min_one_batch=total == 0)
            size = len(entry["records"])
            total += size
            remaining = max(remaining - size, 0)
            failed = failed or entry["error_code"] != 0
            partitions.append(entry)
        responses.append({"topic": name, "partitions": partitions})
    return responses, total, failed


def _read_partition(replicas: ReplicaManager, topic: str, request: dict[str, Any],
                    max_bytes: int, *, min_one_batch: bool) -> dict[str, Any]:
    index = request["partition"]
    partition = None
    try:
        partition = replicas.leader_partition(topic, index)
        partition.check_leader_epoch(request["current_leader_epoch"])
        high_watermark = partition.high_watermark
        region = partition.log.read(request["fetch_offset"], max_bytes,
                                    max_offset=high_watermark, min_one_batch=min_one_batch)
        return _entry(index, 0, high_watermark, partition.log.log_start_offset,
                      region if region is not None else _NO_RECORDS)
    except BrokerResponseError as exc:
        if partition is None:
            return _entry(index, exc.errno, -1, -1, _NO_RECORDS)
        return _entry(index, exc.errno, partition.high_watermark,
                      partition.log.log_start_offset, _NO_RECORDS)
    except Exception:
        log.exception("fetch from %s-%d failed", topic, index)
        return _entry(index, UnknownServerError.errno, -1, -1, _NO_RECORDS)


def _entry(index: int, errno: int, high_watermark: int, log_start_offset: int,
           records: object) -> dict[str, Any]:
    return {"partition_index": index, "error_code": errno, "high_watermark": high_watermark,
            "last_stable_offset": high_watermark, "log_start_offset": log_start_offset,
            "aborted_transactions": None, "preferred_read_replica": -1, "records": records}
