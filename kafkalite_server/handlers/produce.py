"""Produce (0): translate the request for ``ReplicaManager.append_records`` and back.

acks=0 gets no response (and a failed acks=0 request closes the connection, as Kafka
does, so the client refreshes its metadata); a transactional batch that would open a
transaction is first verified with its transaction coordinator (KIP-890, see
:mod:`kafkalite_server.txn.verification`); the replica manager owns everything else.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import TopicAuthorizationFailedError
from kafkalite_server.handlers.registry import CloseConnection, RequestContext
from kafkalite_server.replication.replica_manager import ProduceResult
from kafkalite_server.security.acls import AclOperation, ResourceType


async def handle_produce(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any] | None:
    acks = body["acks"]
    denied = ctx.denied(AclOperation.WRITE, ResourceType.TOPIC,
                        [topic["name"] for topic in body["topic_data"]])
    entries = [((topic["name"], data["index"]), data["records"])
               for topic in body["topic_data"] for data in topic["partition_data"]
               if topic["name"] not in denied]
    refused = await ctx.broker.txn_coordinator.verifier.refuse_unverified(
        body.get("transactional_id"), entries)
    results = await ctx.broker.replica_manager.append_records(
        [entry for entry in entries if entry[0] not in refused], acks=acks,
        timeout_ms=body["timeout_ms"], api_version=ctx.api_version)
    results.update({key: ProduceResult(error, message)
                    for key, (error, message) in refused.items()})
    results.update({(topic["name"], data["index"]): _DENIED for topic in body["topic_data"]
                    if topic["name"] in denied for data in topic["partition_data"]})
    if acks == 0:
        if any(result.error_code for result in results.values()):
            raise CloseConnection("acks=0 produce failed")
        return None
    responses: dict[str, list[dict[str, Any]]] = {}
    for (name, index), result in results.items():
        responses.setdefault(name, []).append(_partition_response(index, result))
    return {"responses": [{"name": name, "partition_responses": parts}
                          for name, parts in responses.items()],
            "throttle_time_ms": 0}


_DENIED = ProduceResult(TopicAuthorizationFailedError.errno)


def _partition_response(index: int, result: ProduceResult) -> dict[str, Any]:
    """Produce v8+ also carries the message and the bad records' indexes (KIP-467)."""
    return {"index": index, "error_code": result.error_code, "base_offset": result.base_offset,
            "log_append_time_ms": result.log_append_time_ms,
            "log_start_offset": result.log_start_offset,
            "record_errors": [{"batch_index": i, "batch_index_error_message": text}
                              for i, text in result.record_errors],
            "error_message": result.error_message}
