"""What a broker asks of the controller: the handlers' view of
:class:`~kafkalite_server.cluster.controller_requests.ControllerRequests`.

The requests are written into the coordination store for the elected controller to act on,
as Kafka's ZooKeeper-mode brokers do; changes reach the broker's own metadata cache later,
through UpdateMetadata. Requests are coroutines: their store calls run off the event loop.
``topic_config`` answers from memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from kafkalite.protocol.errors import BrokerResponseError
from kafkalite_server.cluster.dynamic_config import DynamicLayers
from kafkalite_server.cluster.election_requests import ElectionType
from kafkalite_server.cluster.producer_ids import ProducerIdBlocks
from kafkalite_server.cluster.reassignment import Reassignment
from kafkalite_server.log.config import LogConfig


class ControllerClient(Protocol):
    default_log_config: LogConfig
    producer_ids: ProducerIdBlocks
    dynamic_configs: DynamicLayers

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


    async def alter_reassignments(self, requests: dict[tuple[str, int], list[int] | None]
                                  ) -> dict[tuple[str, int], BrokerResponseError | None]:
        """Starts (or, for None, cancels) each partition's move; NotControllerError on a
        broker that is not the controller."""

    async def list_reassignments(self, keys: Iterable[tuple[str, int]] | None
                                 ) -> dict[tuple[str, int], Reassignment]: ...
