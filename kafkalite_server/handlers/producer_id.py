"""InitProducerId (22): producer ids and epochs for idempotent producers.

Without a producer id (v0-2, or v3+ with -1/-1) the answer is a fresh id with epoch 0.
With the producer's current id and epoch (v3+) it is an epoch bump (KIP-360, see
:class:`~kafkalite_server.cluster.producer_ids.ProducerEpochs`): the same id with epoch + 1,
or a new id once the epoch is exhausted. A stale epoch is PRODUCER_FENCED (v4+) or
INVALID_PRODUCER_EPOCH (v3, as Kafka answers older clients); an id without an epoch or the
reverse is INVALID_REQUEST.

A request naming a transactional id goes to the transaction coordinator: a new id gets a
fresh producer id, a known one its epoch bumped (fencing the previous producer, whose open
transaction is aborted), and ``transaction_timeout_ms`` must be in
(0, ``transaction.max.timeout.ms``] (INVALID_TRANSACTION_TIMEOUT otherwise).

Authorization, as Kafka's: Write on the transactional id when there is one
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one, IdempotentWrite on the Cluster or
Write on at least one topic (CLUSTER_AUTHORIZATION_FAILED), so a principal that may write
nowhere cannot draw producer ids.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidProducerEpochError,
    InvalidRequestError,
    ProducerFencedError,
)
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.handlers.transactions import fenced_error
from kafkalite_server.log.producer_state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kafkalite_server.security.acls import AclOperation, ResourceType
from kafkalite_server.security.api_checks import WRITE_TRANSACTIONAL_ID, Check, declares, requires

FIRST_VERSION_WITH_FENCED = 4

IDEMPOTENT_WRITE = Check(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER,
                         when="without a transactional id",
                         or_else=Check(AclOperation.WRITE, ResourceType.TOPIC, "any topic",
                                       any_resource=True))


@requires(replace(WRITE_TRANSACTIONAL_ID, when="with a transactional id"), "transactional_id")
@declares(IDEMPOTENT_WRITE)
async def handle_init_producer_id(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    if body["transactional_id"] is None and not IDEMPOTENT_WRITE.allows(ctx):
        return _error(IDEMPOTENT_WRITE.error.errno)
    if body["transactional_id"] is not None:
        result = ctx.broker.txn_coordinator.coordinator.init_producer_id(
            body["transactional_id"], body["transaction_timeout_ms"], body["producer_id"],
            body["producer_epoch"], fenced_error=fenced_error("init", ctx.api_version))
        error = await ctx.broker.txn_coordinator.durable(body["transactional_id"],
                                                         result.error)
        if error:
            return _error(error)
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": result.producer_id,
                "producer_epoch": result.producer_epoch}
    allocator = ctx.broker.controller.producer_ids
    producer_id, epoch = body["producer_id"], body["producer_epoch"]
    try:
        if producer_id == NO_PRODUCER_ID and epoch == NO_PRODUCER_EPOCH:
            producer_id, epoch = allocator.allocate(), 0
        elif NO_PRODUCER_ID in (producer_id, epoch):
            raise InvalidRequestError(f"producer id {producer_id} and epoch {epoch}: give "
                                      "both or neither")
        else:
            producer_id, epoch = allocator.epochs.bump(producer_id, epoch)
    except ProducerFencedError:
        return _error(ProducerFencedError.errno if ctx.api_version >= FIRST_VERSION_WITH_FENCED
                      else InvalidProducerEpochError.errno)
    except BrokerResponseError as exc:
        return _error(exc.errno)
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": producer_id,
            "producer_epoch": epoch}


def _error(errno: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": errno, "producer_id": NO_PRODUCER_ID,
            "producer_epoch": NO_PRODUCER_EPOCH}
