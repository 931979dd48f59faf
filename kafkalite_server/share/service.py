"""Share groups inside a running broker, put together: the share coordinator
(``__share_group_state``), share groups' membership (on the group coordinator's
``__consumer_offsets``), the share partitions this broker leads, its share sessions, and
the timers (member sessions, record locks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalite_server.share.config import ShareConfig
from kafkalite_server.share.coordinator_service import ShareCoordinatorService
from kafkalite_server.share.group_configs import ShareGroupConfigs
from kafkalite_server.share.group_service import ShareGroupService
from kafkalite_server.share.manager import EXPIRY_INTERVAL_MS, SharePartitionManager
from kafkalite_server.share.peers import PeerRequests
from kafkalite_server.share.persister import SharePersister
from kafkalite_server.share.sessions import ShareSessions

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker


class ShareService:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.config = config = ShareConfig.from_broker_config(broker.config)
        self.peers = PeerRequests(broker.peer_security, f"share-{broker.node_id}")
        self.coordinator = ShareCoordinatorService(broker, config)
        self.persister = SharePersister(broker, self.coordinator, self.peers,
                                        config.write_timeout_ms)
        self.group_configs = ShareGroupConfigs(broker.config, config.limits)
        self.groups = ShareGroupService(broker, config, self.persister, self.peers,
                                        self.group_configs.auto_offset_reset)
        self.partitions = SharePartitionManager(broker, self.persister,
                                                self.group_configs.settings)
        self.sessions = ShareSessions(config.max_share_sessions, config.session_timeout_ms,
                                      broker.now_ms)

    def start(self) -> None:
        self._broker.tasks.every(EXPIRY_INTERVAL_MS, "share-record-locks",
                                 self.partitions.expire_locks)
        self.groups.start()

    def shutdown(self) -> None:
        self.coordinator.shutdown()
        self.peers.close()
