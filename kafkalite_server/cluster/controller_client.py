"""What a broker asks of the controller, whichever controller it is.

Request handlers see only this: the in-process :class:`~kafkalite_server.cluster.controller.
Controller` of a standalone broker answers it directly; in a ZooKeeper cluster a
:class:`~kafkalite_server.cluster.zk_admin.ZkAdmin` writes the request into ZooKeeper for the
elected controller to act on, as Kafka's ZooKeeper-mode brokers do. Changes reach the
broker's own metadata cache later, through UpdateMetadata. Requests are coroutines: their
store calls run off the event loop. ``topic_config`` answers from memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.cluster.dynamic_config import DynamicLayers
from kafkalite_server.cluster.election_requests import ElectionType
from kafkalite_server.cluster.image import BrokerEndpoint
from kafkalite_server.log.config import LogConfig

if TYPE_CHECKING:
    from kafkalite_server.cluster.inbox import ControllerInbox


class ProducerIds(Protocol):
    epochs: Any  # ProducerEpochs: KIP-360 epoch bumps over this allocator

    def allocate(self) -> int: ...


class ControllerClient(Protocol):
    default_log_config: LogConfig

    @property
    def producer_ids(self) -> ProducerIds: ...  # read-only here: each client has its own kind

    @property
    def dynamic_configs(self) -> DynamicLayers: ...

    def topic_config(self, topic: str) -> LogConfig: ...

    async def load_topic_configs(self, topics: Iterable[str]) -> None:
        """Reads the configs of topics not known yet, before their logs are created."""

    async def topic_overrides(self, topic: str) -> dict[str, str] | None: ...

    async def create_topic(self, name: str, num_partitions: int = -1,
                           replication_factor: int = -1,
                           configs: Mapping[str, str | None] | None = None, *,
                           assignments: Mapping[int, list[int]] | None = None,
                           validate_only: bool = False) -> Any: ...

    async def delete_topic(self, name: str) -> None: ...

    async def create_partitions(self, name: str, count: int,
                                assignments: list[list[int]] | None = None, *,
                                validate_only: bool = False) -> None: ...

    async def alter_topic_configs(self, name: str, configs: Mapping[str, str], *,
                                  validate_only: bool = False) -> None: ...

    async def alter_broker_configs(self, resource_name: str, configs: Mapping[str, str], *,
                                   validate_only: bool = False) -> None: ...

    async def elect_on_request(self, kind: ElectionType, keys: Iterable[tuple[str, int]] | None
                               ) -> dict[tuple[str, int], int | BrokerResponseError]:
        """Each partition's leader after the election, or its error; raises
        NotControllerError on a broker that cannot run elections."""


class Membership(Protocol):
    """How a broker joins and leaves its cluster (registration, and for a clean stop,
    moving its leaderships away first), and the epochs that fence controller messages
    (:class:`~kafkalite_server.cluster.inbox.Epochs`)."""

    @property
    def broker_epoch(self) -> int: ...

    async def controller_epoch_exists(self, epoch: int) -> bool: ...

    async def controlled_shutdown(self, broker_id: int,
                                  broker_epoch: int) -> list[tuple[str, int]]:
        """ControlledShutdown from a stopping broker: the partitions it still leads.
        Raises NotControllerError unless this broker is the controller, and
        StaleBrokerEpochError for an earlier incarnation of the stopping broker."""

    async def join(self, endpoint: BrokerEndpoint, inbox: ControllerInbox) -> None:
        """Registers; the controller then reaches the broker through ``inbox``."""

    async def hand_over(self, node_id: int) -> None:
        """A clean stop's first step: leaderships move away while this broker still serves
        its replicas."""

    async def leave(self, node_id: int) -> None:
        """The last step: the registration ends. It comes after the broker has stopped
        fetching, so no leader takes a broker that is gone back into its ISR."""
