"""Where a broker takes the controller's messages, whichever way they arrived.

The elected controller's channel to its own broker (:class:`InboxChannel`) and the network
handlers of LeaderAndIsr, StopReplica and UpdateMetadata all end in
:meth:`ControllerInbox.handle`, so one broker code path serves every deployment. Before a
LeaderAndIsr is applied, the configs of its topics are loaded (:data:`PrepareTopics`, off
the event loop), so a new partition's log starts with its topic's config without the loop
waiting for the coordination store. Every message is fenced first:

- by broker epoch (KIP-380): a message stamped for an earlier incarnation of this broker
  (an older registration) is refused with STALE_BROKER_EPOCH, so a request the controller
  sent before a restart can never undo what it told the new incarnation;
- by controller epoch: one older than the newest seen is refused with
  STALE_CONTROLLER_EPOCH. A message from the network (:meth:`ControllerInbox.receive`)
  must also carry an epoch the coordination store has had: an epoch above the store's
  ``/controller_epoch`` is refused, so nobody can fence the real controller by sending an
  absurd one (2^31-1).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol

from kafkalite.protocol.errors import (
    BrokerResponseError,
    StaleBrokerEpochError,
    StaleControllerEpochError,
)
from kafkalite_server.cluster.messages import (
    NO_BROKER_EPOCH,
    ControllerMessage,
    LeaderAndIsr,
    PartitionErrors,
    StopReplica,
    UpdateMetadata,
)
from kafkalite_server.cluster.metadata_cache import MetadataCache
from kafkalite_server.cluster.queued_channel import QueuedChannel
from kafkalite_server.replication.replica_manager import ReplicaManager, TopicPartition

log = logging.getLogger(__name__)


class Epochs(Protocol):
    """What this broker knows of the epochs that fence controller messages (its
    membership of the cluster)."""

    @property
    def broker_epoch(self) -> int:
        """The czxid of this broker's registration (NO_BROKER_EPOCH before it has one)."""

    async def controller_epoch_exists(self, epoch: int) -> bool:
        """Whether some controller was elected with ``epoch`` (it is at most the store's
        ``/controller_epoch``); reads the store off the event loop when it must."""


PrepareTopics = Callable[[Iterable[str]], Awaitable[None]]
"""Loads the configs of the named topics, so that creating their logs needs no wait."""


class ControllerInbox:
    def __init__(self, replica_manager: ReplicaManager, metadata: MetadataCache,
                 epochs: Epochs, prepare_topics: PrepareTopics) -> None:
        self.replica_manager = replica_manager
        self.metadata = metadata
        self.epochs = epochs
        self.prepare_topics = prepare_topics

    async def receive(self, message: ControllerMessage) -> dict[TopicPartition, int]:
        """A message from the network: :meth:`deliver`, once its controller epoch is known
        to be one the coordination store has had."""
        if not await self.epochs.controller_epoch_exists(message.controller_epoch):
            raise StaleControllerEpochError(
                f"controller epoch {message.controller_epoch} from controller "
                f"{message.controller_id} was never elected")
        return await self.deliver(message)

    async def deliver(self, message: ControllerMessage) -> dict[TopicPartition, int]:
        """:meth:`handle`, once the topics a LeaderAndIsr names have their configs."""
        if isinstance(message, LeaderAndIsr):
            await self.prepare_topics({state.topic for state in message.partitions})
        return self.handle(message)

    def handle(self, message: ControllerMessage) -> dict[TopicPartition, int]:
        """Per-partition error codes; raises StaleBrokerEpochError for a message meant for
        an earlier incarnation, StaleControllerEpochError for an old controller."""
        own = self.epochs.broker_epoch
        if message.broker_epoch != NO_BROKER_EPOCH and message.broker_epoch < own:
            raise StaleBrokerEpochError(
                f"{type(message).__name__} from controller {message.controller_id} is for "
                f"broker epoch {message.broker_epoch}, this broker's is {own}")
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


class InboxChannel(QueuedChannel):
    """An elected controller's channel to its own broker: each message delivered through
    :meth:`ControllerInbox.deliver` (prepared, then handled) on the broker's loop."""

    def __init__(self, inbox: ControllerInbox, loop: asyncio.AbstractEventLoop) -> None:
        self.inbox = inbox
        super().__init__(loop, "controller-inbox")

    async def _deliver(self, message: ControllerMessage) -> PartitionErrors | None:
        broker_id = self.inbox.replica_manager.broker_id
        try:
            return await self.inbox.deliver(message)
        except BrokerResponseError as exc:
            log.warning("broker %d refused %s: %s", broker_id, type(message).__name__, exc)
        except Exception:
            log.exception("broker %d: %s failed", broker_id, type(message).__name__)
        return {}

    def _release(self) -> None:
        """The broker's own inbox holds nothing to free."""
