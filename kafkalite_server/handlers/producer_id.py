"""InitProducerId (22): a fresh producer id with epoch 0 for idempotent producers.

Transactions are not supported: a request naming a transactional id gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, so a transactional producer fails at its first
step with a clear error instead of later, mid-transaction.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import TransactionalIdAuthorizationFailedError
from kafkalite_server.handlers.registry import RequestContext


async def handle_init_producer_id(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    if body["transactional_id"] is not None:
        return {"throttle_time_ms": 0, "error_code": TransactionalIdAuthorizationFailedError.errno,
                "producer_id": -1, "producer_epoch": -1}
    producer_id = ctx.broker.controller.producer_ids.allocate()
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": producer_id,
            "producer_epoch": 0}
