"""Produce (0): validate acks, append each partition's records, answer per partition.

acks=0 gets no response (and a failed acks=0 request closes the connection, as Kafka
does); acks=1 answers after the local append; acks=-1 waits in the produce purgatory
until the high watermark covers the append.
"""

from __future__ import annotations

import logging
from typing import Any

from kafkalite.errors import CorruptRecordError, ProtocolDecodeError
from kafkalite.protocol.errors import (
    BrokerResponseError,
    CorruptMessageError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    UnknownServerError,
)
from kafkalite_server.handlers.registry import CloseConnection, RequestContext
from kafkalite_server.log.validator import RecordValidationError
from kafkalite_server.replication.delayed import DelayedProduce
from kafkalite_server.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

_VALID_ACKS = (-1, 0, 1)


async def handle_produce(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any] | None:
    acks = body["acks"]
    replicas = ctx.broker.replica_manager
    results: dict[tuple[str, int], dict[str, Any]] = {}
    appended: dict[tuple[str, int], int] = {}
    for topic in body["topic_data"]:
        name = topic["name"]
        for data in topic["partition_data"]:
            key = (name, data["index"])
            if acks not in _VALID_ACKS:
                results[key] = _error(data["index"], InvalidRequiredAcksError.errno)
                continue
            results[key], last_offset = _append(replicas, key, data["records"], acks,
                                                ctx.api_version)
            if last_offset is not None:
                appended[key] = last_offset
    if acks == 0:
        if any(result["error_code"] for result in results.values()):
            raise CloseConnection("acks=0 produce failed")
        return None
    if acks == -1 and appended:
        operation = DelayedProduce(body["timeout_ms"], appended, replicas.partitions.get)
        await replicas.produce_purgatory.wait(operation, appended)
        for key in appended:
            if not operation.acknowledged(key):
                results[key] = _error(key[1], RequestTimedOutError.errno)
            elif key not in replicas.partitions:
                results[key] = _error(key[1], NotLeaderOrFollowerError.errno)
    responses: dict[str, list[dict[str, Any]]] = {}
    for (name, _index), result in results.items():
        responses.setdefault(name, []).append(result)
    return {"responses": [{"name": name, "partition_responses": parts}
                          for name, parts in responses.items()],
            "throttle_time_ms": 0}


def _append(replicas: ReplicaManager, key: tuple[str, int], records: memoryview | None,
            acks: int, api_version: int) -> tuple[dict[str, Any], int | None]:
    """The partition's response entry, and the last appended offset on success."""
    index = key[1]
    try:
        partition = replicas.leader_partition(*key)
        if records is None or len(records) == 0:
            raise InvalidRecordError("produce request without records")
        if acks == -1 and partition.log.config.min_insync_replicas > 1:
            raise NotEnoughReplicasError(
                f"ISR has 1 replica, min.insync.replicas is "
                f"{partition.log.config.min_insync_replicas}")
        info = replicas.append(partition, records, api_version)
    except RecordValidationError as exc:
        return _error(index, exc.errno, exc.context, exc.record_errors), None
    except BrokerResponseError as exc:
        return _error(index, exc.errno, exc.context or None), None
    except (CorruptRecordError, ProtocolDecodeError) as exc:
        return _error(index, CorruptMessageError.errno, str(exc)), None
    except Exception:
        log.exception("append to %s-%d failed", *key)
        return _error(index, UnknownServerError.errno), None
    return {"index": index, "error_code": 0, "base_offset": info.first_offset,
            "log_append_time_ms": info.log_append_time_ms,
            "log_start_offset": info.log_start_offset, "record_errors": [],
            "error_message": None}, info.last_offset


def _error(index: int, errno: int, message: str | None = None,
           record_errors: tuple[tuple[int, str], ...] = ()) -> dict[str, Any]:
    """A failed partition; Produce v8+ also carries ``message`` and the bad records'
    indexes within the batch (KIP-467)."""
    return {"index": index, "error_code": errno, "base_offset": -1,
            "log_append_time_ms": -1, "log_start_offset": -1,
            "record_errors": [{"batch_index": i, "batch_index_error_message": text}
                              for i, text in record_errors],
            "error_message": message}
