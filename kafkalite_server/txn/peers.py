"""One request from the transaction coordinator's side to another broker: markers
(WriteTxnMarkers), verification (AddPartitionsToTxn v4) and the hanging-transaction check
(ListTransactions) all ask a peer and carry on without its answer when it fails."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite_server.cluster.broker_channel import call
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 30.0
"""How long a peer may take to answer (Kafka's request.timeout.ms)."""


async def ask_peer(broker: Broker, peer: BrokerEndpoint, api_key: ApiKey, version: int,
                   body: dict[str, Any], *, purpose: str) -> dict[str, Any] | None:
    """The peer's answer, or None (logged) when it cannot be had."""
    try:
        return await call(peer, api_key, version, body,
                          client_id=f"{purpose}-{broker.node_id}",
                          timeout_s=REQUEST_TIMEOUT_S, security=broker.peer_security)
    except (OSError, TimeoutError, KafkaError) as exc:
        log.info("%s to broker %d: %s", api_key.name, peer.node_id, exc)
        return None
