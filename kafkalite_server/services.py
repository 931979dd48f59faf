"""What request handlers and the markers they write may use of their broker: its services,
not the ``Broker`` itself.

Handlers only translate a request into calls on these services and their answers into a
response, as Kafka's ``KafkaApis`` does over its managers. Naming the services in a
protocol keeps the handlers below the broker's assembly in the layers (they never import
``kafkalite_server.broker``), and lets a test serve a handler from any object that has
them. Only types are imported here, so any layer may name the protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kafkalite_server.cluster.cluster_node import ClusterMembership
    from kafkalite_server.cluster.controller_client import ControllerClient
    from kafkalite_server.cluster.inbox import ControllerInbox
    from kafkalite_server.cluster.metadata_cache import MetadataCache
    from kafkalite_server.config import BrokerConfig
    from kafkalite_server.group.service import GroupCoordinatorService
    from kafkalite_server.handlers.registry import HandlerRegistry
    from kafkalite_server.log.down_conversion import DownConversionBudget
    from kafkalite_server.log.manager import LogManager
    from kafkalite_server.quotas.client_quota_store import ClientQuotaStore
    from kafkalite_server.replication.replica_manager import ReplicaManager
    from kafkalite_server.security.broker_security import BrokerSecurity
    from kafkalite_server.share.service import ShareService
    from kafkalite_server.txn.service import TransactionCoordinatorService


class BrokerServices(Protocol):
    """The broker's services, read-only to a handler."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def handlers(self) -> HandlerRegistry:
        """The registered APIs (ApiVersions advertises them)."""
    @property
    def security(self) -> BrokerSecurity: ...
    @property
    def metadata_cache(self) -> MetadataCache:
        """This broker's view of the cluster, as the controller last told it."""
    @property
    def controller(self) -> ControllerClient:
        """Requests to the controller (topic creation, configs, elections, producer ids)."""
    @property
    def membership(self) -> ClusterMembership: ...
    @property
    def inbox(self) -> ControllerInbox:
        """Where the controller's LeaderAndIsr, StopReplica and UpdateMetadata land."""
    @property
    def replica_manager(self) -> ReplicaManager:
        """Appends, fetches, their purgatories and the ISR."""
    @property
    def log_manager(self) -> LogManager: ...
    @property
    def client_quotas(self) -> ClientQuotaStore:
        """Client quotas, as last read from the coordination store."""
    @property
    def down_conversion(self) -> DownConversionBudget: ...
    @property
    def group_coordinator(self) -> GroupCoordinatorService: ...
    @property
    def txn_coordinator(self) -> TransactionCoordinatorService: ...
    @property
    def share(self) -> ShareService: ...
