"""What the controller tells brokers: LeaderAndIsr, StopReplica and UpdateMetadata, as data.

The controller reaches a broker only through a :class:`BrokerChannel` carrying these
objects. In one process the channel hands them straight to the broker's
:class:`~kafkalite_server.cluster.inbox.ControllerInbox`; between processes it encodes them
as Kafka's inter-broker requests (api keys 4, 5 and 6) and the receiving broker decodes them
back into the same objects, so every deployment runs the same broker code.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.topic_ids import ZERO

NO_LEADER = -1
NO_BROKER_EPOCH = -1
"""A message stamped with no broker epoch (from a controller of a version before KIP-380):
no incarnation check applies."""
LEADER_DURING_DELETE = -2
"""UpdateMetadata marks a deleted topic's partitions with this leader, as Kafka does."""


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition as the controller sees it (the partition state node plus the
    assignment). ``zk_version`` is the state node's version, for the leader's later ISR
    writes; ``topic_id`` is the topic's, from its assignment node."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int = 0
    offline_replicas: tuple[int, ...] = ()
    is_new: bool = False
    topic_id: uuid.UUID = ZERO
    """The topic's id (KIP-516); ZERO only from a sender that had none."""

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """``broker_epoch`` names the incarnation of the target broker the controller meant
    (KIP-380): the czxid of its registration, so a later incarnation refuses it."""

    controller_id: int
    controller_epoch: int
    partitions: tuple[PartitionState, ...]
    live_leaders: tuple[BrokerEndpoint, ...] = ()
    broker_epoch: int = NO_BROKER_EPOCH


@dataclass(frozen=True, slots=True)
class StopReplica:
    controller_id: int
    controller_epoch: int
    partitions: tuple[tuple[str, int], ...]
    delete: bool
    broker_epoch: int = NO_BROKER_EPOCH


@dataclass(frozen=True, slots=True)
class UpdateMetadata:
    """Changed partitions (leader ``LEADER_DURING_DELETE`` for a deleted topic) and the full
    list of live brokers."""

    controller_id: int
    controller_epoch: int
    partitions: tuple[PartitionState, ...]
    live_brokers: tuple[BrokerEndpoint, ...]
    broker_epoch: int = NO_BROKER_EPOCH


ControllerMessage = LeaderAndIsr | StopReplica | UpdateMetadata


PartitionErrors = dict[tuple[str, int], int]
"""A broker's answer to a controller message: an error code per partition."""
OnAnswer = Callable[[PartitionErrors], None]


class BrokerChannel(Protocol):
    """The controller's one way to reach a broker. ``send`` never blocks the controller;
    a channel that cannot deliver logs and retries or drops (a dead broker's channel is
    closed when the broker leaves). ``on_answer`` gets the broker's per-partition errors
    once it answered (on the broker's event loop)."""

    def send(self, message: ControllerMessage, on_answer: OnAnswer | None = None) -> None: ...

    async def drained(self) -> None:
        """Returns once every message sent so far was delivered (for a network channel:
        answered). A controller that hands its duties over awaits this first, so that its
        last decisions reach the brokers before it goes."""

    def close(self) -> None: ...


async def all_delivered(channels: Iterable[BrokerChannel], timeout_s: float) -> bool:
    """Waits (at most ``timeout_s``) until every channel delivered what was sent on it;
    False if one has not. A controller handing its duties over awaits this first."""
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.gather(*(channel.drained() for channel in channels))
    except TimeoutError:
        return False
    return True
