"""Where a broker takes the controller's messages, whichever way they arrived.

The in-process :class:`LocalChannel` and the network handlers of LeaderAndIsr, StopReplica
and UpdateMetadata both end in :meth:`ControllerInbox.handle`, so one broker code path
serves every deployment. Every message is fenced by controller epoch first.
"""

from __future__ import annotations

import logging

from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.cluster.messages import (
    ControllerMessage,
    LeaderAndIsr,
    StopReplica,
    UpdateMetadata,
)
from kafkalite_server.cluster.metadata_cache import MetadataCache
from kafkalite_server.replication.replica_manager import ReplicaManager, TopicPartition

log = logging.getLogger(__name__)


class ControllerInbox:
    def __init__(self, replica_manager: ReplicaManager, metadata: MetadataCache) -> None:
        self.replica_manager = replica_manager
        self.metadata = metadata

    def handle(self, message: ControllerMessage) -> dict[TopicPartition, int]:
        """Per-partition error codes; raises StaleControllerEpochError for an old controller."""
        if isinstance(message, UpdateMetadata):
            self.replica_manager.fence(message.controller_epoch)
            self.metadata.update(message)
            # A topic named in an UpdateMetadata may have new configs (AlterConfigs).
            for topic in {state.topic for state in message.partitions}:
                self.replica_manager.update_config(topic)
            return {}
        if isinstance(message, LeaderAndIsr):
            return self.replica_manager.become_leader_or_follower(message)
        if isinstance(message, StopReplica):
            return self.replica_manager.stop_replicas(message)
        raise TypeError(f"not a controller message: {message!r}")


class LocalChannel:
    """A :class:`~kafkalite_server.cluster.messages.BrokerChannel` to a broker in this
    process: delivery is a call, so the change is in place when ``send`` returns."""

    def __init__(self, inbox: ControllerInbox) -> None:
        self.inbox = inbox

    def send(self, message: ControllerMessage) -> None:
        try:
            self.inbox.handle(message)
        except BrokerResponseError as exc:
            log.warning("broker %d refused %s: %s", self.inbox.replica_manager.broker_id,
                        type(message).__name__, exc)

    async def drained(self) -> None:
        """Delivery is a call: nothing is ever in flight."""

    def close(self) -> None:
        """Nothing to release."""
