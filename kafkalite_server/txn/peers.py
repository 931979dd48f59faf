"""One request from the transaction coordinator's side to another broker: markers
(WriteTxnMarkers), verification (AddPartitionsToTxn v4) and the hanging-transaction check
(ListTransactions) all ask a peer and carry on without its answer when it fails. Each of
the three senders keeps its own connection per destination (a :class:`PeerRequests`)."""

from __future__ import annotations

import logging
from typing import Any

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.peer_requests import PeerRequests

log = logging.getLogger(__name__)


async def ask_peer(peers: PeerRequests, peer: BrokerEndpoint, api_key: ApiKey, version: int,
                   body: dict[str, Any]) -> dict[str, Any] | None:
    """The peer's answer, or None (logged) when it cannot be had."""
    try:
        return await peers.call(peer, api_key, version, body)
    except (OSError, TimeoutError, KafkaError) as exc:
        log.info("%s to broker %d: %s", api_key.name, peer.node_id, exc)
        return None
