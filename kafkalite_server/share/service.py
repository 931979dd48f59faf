"""Share groups inside a running broker, put together: the share coordinator
(``__share_group_state``), share groups' membership (on the group coordinator's
``__consumer_offsets``), the share partitions this broker leads, its share sessions, the
timers (member sessions, record locks), and the groups' configs.

A group's configs are kept by its coordinator. A broker that is not the coordinator of a
group passes DescribeConfigs and AlterConfigs of the group on to it (a request passed on
is never passed on again: the broker answers NOT_COORDINATOR); partition leaders ask the
coordinator for a group's settings when they load one of its share partitions, and keep
them for ``SETTINGS_TTL_S``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from kafkalite.errors import ConfigError, KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.config_codes import ConfigResourceType, ConfigSourceType
from kafkalite.protocol.errors import (
    CoordinatorNotAvailableError,
    InvalidConfigError,
    NotCoordinatorError,
    error_for_code,
)
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.peer_requests import PeerRequests
from kafkalite_server.coordinator.errors import write_error
from kafkalite_server.share.config import ShareConfig
from kafkalite_server.share.coordinator_service import ShareCoordinatorService
from kafkalite_server.share.group_configs import GroupConfigs
from kafkalite_server.share.group_service import ShareGroupService
from kafkalite_server.share.manager import (
    EXPIRY_INTERVAL_MS,
    GroupSettings,
    SharePartitionManager,
)
from kafkalite_server.share.persister import SharePersister
from kafkalite_server.share.sessions import ShareSessions

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker

log = logging.getLogger(__name__)

PEER_CLIENT_PREFIX = "share-"
"""The client id prefix of this module's requests to other brokers."""
SETTINGS_TTL_S = 10.0
COORDINATOR_WAIT_S = 5.0
"""How long a group config request waits for the group's coordinator (the offsets topic
created by the request itself, a partition loading)."""
COORDINATOR_POLL_S = 0.05
DESCRIBE_CONFIGS_VERSION = 1
ALTER_CONFIGS_VERSION = 0


class ShareService:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.config = config = ShareConfig.from_broker_config(broker.config)
        self.peers = PeerRequests(broker.peer_security,
                                  f"{PEER_CLIENT_PREFIX}{broker.node_id}")
        self.coordinator = ShareCoordinatorService(broker, config)
        self.persister = SharePersister(broker, self.coordinator, self.peers,
                                        config.write_timeout_ms)
        self.group_configs = GroupConfigs(broker.config, config.limits)
        self.groups = ShareGroupService(broker, config, self.persister, self.peers,
                                        self.group_configs)
        self.partitions = SharePartitionManager(broker, self.persister, self.group_settings)
        self.sessions = ShareSessions(config.max_share_sessions,
                                      config.timeouts.session_timeout_ms, broker.now_ms)
        self._settings: dict[str, tuple[float, GroupSettings]] = {}

    def start(self) -> None:
        self._broker.tasks.every(EXPIRY_INTERVAL_MS, "share-record-locks",
                                 self.partitions.expire_locks)
        self.groups.start()

    def shutdown(self) -> None:
        self.coordinator.shutdown()
        self.peers.close()

    # ------------------------------------------------------------------ group configs

    async def group_settings(self, group_id: str) -> GroupSettings:
        """The group's settings as its coordinator has them (the defaults when it cannot
        be asked)."""
        if self.groups.groups.ownership.owns(group_id):
            return self.group_configs.settings(self.groups.groups.configs(group_id))
        cached = self._settings.get(group_id)
        if cached is not None and time.monotonic() - cached[0] < SETTINGS_TTL_S:
            return cached[1]
        try:
            overrides = await self.group_overrides(group_id, passed_on=False)
        except KafkaError as exc:
            log.info("the settings of group %r are not available (%s): using the defaults",
                     group_id, exc)
            overrides = {}
        settings = self.group_configs.settings(overrides)
        self._settings[group_id] = (time.monotonic(), settings)
        return settings

    async def group_overrides(self, group_id: str, *, passed_on: bool) -> dict[str, str]:
        """The configs set for the group; raises a BrokerResponseError."""
        coordinator = await self._coordinator(group_id, passed_on)
        if coordinator is None:
            return self.groups.groups.configs(group_id)
        answer = await self._call(coordinator, group_id, ApiKey.DESCRIBE_CONFIGS,
                                            DESCRIBE_CONFIGS_VERSION, {
            "resources": [{"resource_type": int(ConfigResourceType.GROUP),
                           "resource_name": group_id, "configuration_keys": None}],
            "include_synonyms": False})
        result = answer["results"][0]
        _raise_for(result["error_code"], result.get("error_message"))
        return {entry["name"]: entry["value"] for entry in result["configs"]
                if entry["config_source"] == ConfigSourceType.DYNAMIC_GROUP_CONFIG}

    def check_group_config_names(self, names: list[str]) -> None:
        """INVALID_CONFIG naming the first name that is no group config."""
        unknown = [name for name in names if name not in self.group_configs.keys]
        if unknown:
            raise InvalidConfigError(f"{unknown[0]}: not a group config (kafkalite "
                                     f"knows {', '.join(sorted(self.group_configs.keys))})")

    async def alter_group_configs(self, group_id: str, configs: dict[str, str], *,
                                  validate_only: bool, passed_on: bool) -> None:
        """The group's configs become ``configs``; raises a BrokerResponseError."""
        try:
            self.group_configs.validate(configs)
        except ConfigError as exc:
            raise InvalidConfigError(str(exc)) from None
        if validate_only:
            return
        coordinator = await self._coordinator(group_id, passed_on)
        if coordinator is None:
            try:
                error = self.groups.groups.set_configs(group_id, configs)
            except Exception as exc:
                error = write_error(exc)
            _raise_for(error or await self.groups.runtime.committed(group_id))
            return
        answer = await self._call(coordinator, group_id, ApiKey.ALTER_CONFIGS,
                                            ALTER_CONFIGS_VERSION, {
            "resources": [{"resource_type": int(ConfigResourceType.GROUP),
                           "resource_name": group_id,
                           "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
            "validate_only": False})
        result = answer["responses"][0]
        _raise_for(result["error_code"], result.get("error_message"))

    async def _coordinator(self, group_id: str, passed_on: bool) -> BrokerEndpoint | None:
        """The group's coordinator if it is another broker; None when this broker is it
        (and has loaded the group's partition). A coordinator just elected or still
        loading is waited for, up to ``COORDINATOR_WAIT_S``."""
        deadline = time.monotonic() + COORDINATOR_WAIT_S
        ownership = self.groups.groups.ownership
        while True:
            error = ownership.error_for(group_id)
            if not error:
                return None
            if error == NotCoordinatorError.errno:
                if passed_on:
                    raise NotCoordinatorError(f"this broker is not the coordinator of "
                                              f"{group_id!r}")
                endpoint = await self.groups.runtime.coordinator_for(group_id)
                if endpoint is not None and endpoint.node_id != self._broker.node_id:
                    return endpoint
            if time.monotonic() >= deadline:
                raise error_for_code(error)(f"the coordinator of {group_id!r}")
            await asyncio.sleep(COORDINATOR_POLL_S)

    async def _call(self, endpoint: BrokerEndpoint, group_id: str, api_key: ApiKey,
                    version: int, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.peers.call(endpoint, api_key, version, dict(body))
        except (OSError, TimeoutError) as exc:
            raise CoordinatorNotAvailableError(
                f"the coordinator of {group_id!r} (broker {endpoint.node_id}): {exc}") from None


def passed_on(client_id: str | None) -> bool:
    """Is this request one a broker passed on to this one (its coordinator)?"""
    return (client_id or "").startswith(PEER_CLIENT_PREFIX)


def _raise_for(error: int, message: str | None = None) -> None:
    if error:
        raise error_for_code(error)(message or "")
