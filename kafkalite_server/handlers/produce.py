"""Produce (0): translate the request for ``ReplicaManager.append_records`` and back.

acks=0 gets no response (and a failed acks=0 request closes the connection, as Kafka
does, so the client refreshes its metadata); a transactional batch that would open a
transaction is first verified with its transaction coordinator (KIP-890, see
:mod:`kafkalite_server.txn.verification`); the replica manager owns everything else.

Authorization, as Kafka's: Write on each topic (the others' partitions answer
TOPIC_AUTHORIZATION_FAILED), and a request carrying transactional batches needs Write on
its ``transactional_id`` too, or every partition answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is appended.

v10+ (KIP-951): a partition answered NOT_LEADER_OR_FOLLOWER names its current leader
(:mod:`~kafkalite_server.handlers.leader_hints`). v11 only allows TRANSACTION_ABORTABLE, which
this broker's verification never answers (it maps the coordinator's answer to
INVALID_TXN_STATE, as Kafka does for older producers).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.errors import TopicAuthorizationFailedError
from kafkalite.records.batch_header import read_batch_header
from kafkalite_server.handlers.leader_hints import (
    PRODUCE_HINTS_SINCE,
    PRODUCE_REDIRECTS,
    LeaderHints,
)
from kafkalite_server.handlers.registry import CloseConnection, RequestContext
from kafkalite_server.replication.replica_manager import ProduceResult
from kafkalite_server.security.api_checks import WRITE_TOPICS, WRITE_TRANSACTIONAL_ID, declares

TRANSACTIONAL_WRITE = replace(WRITE_TRANSACTIONAL_ID, when="transactional records")


@declares(WRITE_TOPICS, TRANSACTIONAL_WRITE)
async def handle_produce(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any] | None:
    acks = body["acks"]
    transactional_id = body.get("transactional_id")
    if _has_transactional_batches(body) and (
            transactional_id is None or not TRANSACTIONAL_WRITE.allows(ctx, transactional_id)):
        refused = frozenset(topic["name"] for topic in body["topic_data"])
        answer = ProduceResult(TRANSACTIONAL_WRITE.error.errno)
    else:
        refused = WRITE_TOPICS.denied(ctx, [topic["name"] for topic in body["topic_data"]])
        answer = _DENIED
    entries = [((topic["name"], data["index"]), data["records"])
               for topic in body["topic_data"] for data in topic["partition_data"]
               if topic["name"] not in refused]
    unverified = await ctx.broker.txn_coordinator.verifier.refuse_unverified(
        transactional_id, entries)
    results = await ctx.broker.replica_manager.append_records(
        [entry for entry in entries if entry[0] not in unverified], acks=acks,
        timeout_ms=body["timeout_ms"], api_version=ctx.api_version, on_appended=ctx.on_appended)
    results.update({key: ProduceResult(error, message)
                    for key, (error, message) in unverified.items()})
    results.update({(topic["name"], data["index"]): answer for topic in body["topic_data"]
                    if topic["name"] in refused for data in topic["partition_data"]})
    if acks == 0:
        if any(result.error_code for result in results.values()):
            raise CloseConnection("acks=0 produce failed")
        return None
    hints = LeaderHints(ctx) if ctx.api_version >= PRODUCE_HINTS_SINCE else None
    responses: dict[str, list[dict[str, Any]]] = {}
    for (name, index), result in results.items():
        response = _partition_response(index, result)
        if hints is not None and result.error_code in PRODUCE_REDIRECTS:
            response["current_leader"] = hints.current_leader(name, index)
        responses.setdefault(name, []).append(response)
    return {"responses": [{"name": name, "partition_responses": parts}
                          for name, parts in responses.items()],
            "throttle_time_ms": 0,
            "node_endpoints": [] if hints is None else hints.node_endpoints()}


_DENIED = ProduceResult(TopicAuthorizationFailedError.errno)


def _has_transactional_batches(body: dict[str, Any]) -> bool:
    """Kafka's test: is the first batch of any partition's records transactional? (A batch
    the header reader cannot make sense of is left for the log's validation to refuse.)"""
    for topic in body["topic_data"]:
        for data in topic["partition_data"]:
            records = data["records"]
            try:
                header = read_batch_header(records) if records else None
            except CorruptRecordError:
                continue
            if header is not None and header.is_transactional:
                return True
    return False


def _partition_response(index: int, result: ProduceResult) -> dict[str, Any]:
    """Produce v8+ also carries the message and the bad records' indexes (KIP-467)."""
    return {"index": index, "error_code": result.error_code, "base_offset": result.base_offset,
            "log_append_time_ms": result.log_append_time_ms,
            "log_start_offset": result.log_start_offset,
            "record_errors": [{"batch_index": i, "batch_index_error_message": text}
                              for i, text in result.record_errors],
            "error_message": result.error_message}
