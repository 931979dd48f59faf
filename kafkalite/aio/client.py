"""The asyncio client: one :class:`~kafkalite.aio.connection.AIOConnection` per broker, the
cluster's metadata and request routing, shared by the asyncio producer, consumer and admin.

Metadata is the SDK's :class:`~kafkalite.client.cluster.ClusterMetadata`, fed from Metadata
answers; a refresh is one request at a time, shared by everyone awaiting it. Security
settings take aiokafka's names and are checked and built by the SDK's own
:mod:`kafkalite.client.settings` and :mod:`kafkalite.client.security`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.aio.connection import AIOConnection, Response
from kafkalite.client.client import parse_bootstrap_servers
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.security import AUTHENTICATION_ERRORS, client_security
from kafkalite.client.settings import check_security
from kafkalite.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    InvalidTopicError,
    TopicAuthorizationFailedError,
    error_for_code,
)

log = logging.getLogger(__name__)

GROUP_KEY = 0
TRANSACTION_KEY = 1
_BOOTSTRAP_BASE = -1
"""Bootstrap servers get node ids -1, -2, ... until the metadata names the brokers."""


def security_settings(security_protocol: str, ssl_context: Any, sasl_mechanism: str,
                      sasl_plain_username: str | None, sasl_plain_password: str | None,
                      sasl_oauth_token_provider: Any) -> dict[str, Any]:
    """aiokafka's security parameters as the SDK's security settings (checked)."""
    config: dict[str, Any] = {
        "security_protocol": security_protocol, "ssl_context": ssl_context,
        "sasl_mechanism": sasl_mechanism, "sasl_plain_username": sasl_plain_username,
        "sasl_plain_password": sasl_plain_password,
        "sasl_oauth_token_provider": sasl_oauth_token_provider,
        "ssl_cafile": None, "ssl_check_hostname": True, "ssl_certfile": None,
        "ssl_keyfile": None, "ssl_password": None, "ssl_crlfile": None, "ssl_ciphers": None,
        "proxy_url": None, "socks5_proxy": None,
    }
    check_security(config)
    return config


class AIOClient:
    """Connections, metadata and routing for the asyncio API (one per producer/consumer)."""

    def __init__(self, *, bootstrap_servers: str | Iterable[str], client_id: str | None,
                 request_timeout_ms: int, metadata_max_age_ms: int, retry_backoff_ms: int,
                 security: Mapping[str, Any], allow_auto_topic_creation: bool = True) -> None:
        self._bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.retry_backoff = retry_backoff_ms / 1000
        self._security = client_security(security)
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.cluster = ClusterMetadata()
        self.topics: set[str] = set()
        self.all_topics = False
        self._connections: dict[int, AIOConnection] = {}
        self._opening: dict[int, asyncio.Task[AIOConnection]] = {}
        self._refresh: asyncio.Task[None] | None = None

    # -- connections -----------------------------------------------------------------------

    def _address(self, node_id: int) -> tuple[str, int]:
        broker = self.cluster.broker(node_id)
        if broker is not None:
            return broker.host, broker.port
        if node_id <= _BOOTSTRAP_BASE:
            return self._bootstrap[_BOOTSTRAP_BASE - node_id]
        raise KafkaConnectionError(f"node {node_id} is not in the cluster metadata")

    async def connection(self, node_id: int) -> AIOConnection:
        """A READY connection to ``node_id`` (opened on first use, shared after)."""
        conn = self._connections.get(node_id)
        if conn is not None and conn.is_ready():
            return conn
        task = self._opening.get(node_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._open(node_id))
            self._opening[node_id] = task
        return await asyncio.shield(task)

    async def _open(self, node_id: int) -> AIOConnection:
        try:
            host, port = self._address(node_id)
            conn = AIOConnection(node_id, host, port, client_id=self.client_id,
                                 request_timeout_ms=self.request_timeout_ms,
                                 security=self._security)
            await conn.open()
            self._connections[node_id] = conn
            return conn
        finally:
            self._opening.pop(node_id, None)

    async def send(self, node_id: int, api_key: int, body: Mapping[str, Any], *,
                   expect_response: bool = True) -> Response:
        """Send one request to ``node_id`` and await its answer."""
        conn = await self.connection(node_id)
        future = conn.send(api_key, body, expect_response=expect_response)
        await conn.drain()
        return await future

    async def api_version(self, node_id: int, api_key: int) -> int:
        return (await self.connection(node_id)).api_version(api_key)

    async def any_node(self) -> int:
        """A broker to ask cluster-wide questions: a known one, else a bootstrap server."""
        nodes = sorted(b.node_id for b in self.cluster.brokers())
        ready = [n for n in nodes if n in self._connections and self._connections[n].is_ready()]
        if ready:
            return ready[0]
        candidates = nodes + [_BOOTSTRAP_BASE - i for i in range(len(self._bootstrap))]
        errors = []
        for node in candidates:
            try:
                await self.connection(node)
                return node
            except AUTHENTICATION_ERRORS:
                raise  # the next broker will not accept these credentials either
            except KafkaError as exc:
                errors.append(str(exc))
        raise KafkaConnectionError("no broker is reachable: " + "; ".join(errors))

    # -- metadata --------------------------------------------------------------------------

    async def bootstrap(self) -> None:
        """Connect to a bootstrap server and read the cluster's metadata, retrying within
        ``request_timeout_ms``."""
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while True:
            try:
                await self.refresh_metadata()
                return
            except AUTHENTICATION_ERRORS:
                raise
            except KafkaError as exc:
                if time.monotonic() + self.retry_backoff >= deadline:
                    raise KafkaConnectionError(
                        f"cannot bootstrap from {self._bootstrap}: {exc}") from exc
                await asyncio.sleep(self.retry_backoff)

    async def refresh_metadata(self) -> None:
        """One Metadata round trip; callers that come while one is on the way share it."""
        task = self._refresh
        if task is None or task.done():
            task = self._refresh = asyncio.get_running_loop().create_task(self._fetch_metadata())
            task.add_done_callback(_seen)
        await asyncio.shield(task)

    async def _fetch_metadata(self) -> None:
        body = await self.fetch_metadata(None if self.all_topics else sorted(self.topics))
        self.cluster.update_from_metadata(body, int(time.time() * 1000))

    async def fetch_metadata(self, topics: Iterable[str] | None) -> Response:
        """One Metadata answer about ``topics`` (None: every topic), as the broker sent it;
        the cached metadata is left as it is."""
        node = await self.any_node()
        return await self.send(node, ApiKey.METADATA, {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": self.allow_auto_topic_creation})

    def check_topic(self, topic: str) -> None:
        """Raise the typed error the metadata gave for ``topic``: not authorized (the
        principal may not describe it) or an invalid name. Retrying would not help."""
        if topic in self.cluster.unauthorized_topics():
            raise TopicAuthorizationFailedError(f"not authorized to access topic {topic!r}")
        if topic in self.cluster.invalid_topics():
            raise InvalidTopicError(f"{topic!r} is not a valid topic name")

    async def wait_on_metadata(self, topic: str, timeout: float) -> frozenset[int]:
        """The partitions of ``topic``, refreshing metadata until it is known."""
        if topic not in self.topics:
            self.topics.add(topic)
        deadline = time.monotonic() + timeout
        while True:
            partitions = self.cluster.partitions_for_topic(topic)
            if partitions:
                return partitions
            self.check_topic(topic)
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(f"topic {topic!r} is not in the metadata after "
                                        f"{timeout:g} s")
            await self.refresh_metadata()
            self.check_topic(topic)
            if not self.cluster.partitions_for_topic(topic):
                await asyncio.sleep(self.retry_backoff)

    async def maybe_refresh(self) -> None:
        """Refresh if someone asked for it or the metadata is older than its max age."""
        if self.cluster.needs_update(int(time.time() * 1000), self.metadata_max_age_ms):
            try:
                await self.refresh_metadata()
            except KafkaError as exc:
                log.debug("metadata refresh failed: %r", exc)
                await asyncio.sleep(self.retry_backoff)

    # -- coordinators ----------------------------------------------------------------------

    async def find_coordinator(self, key: str, key_type: int = GROUP_KEY) -> int:
        """The node id of the coordinator of a group (or transactional id), retried within
        ``request_timeout_ms`` while the broker says it is not available yet."""
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while True:
            body = await self.send(await self.any_node(), ApiKey.FIND_COORDINATOR,
                                   {"key": key, "key_type": key_type,
                                    "coordinator_keys": [key]})
            if body.get("coordinators"):
                body = body["coordinators"][0]
            code = body["error_code"]
            if code:
                error = error_for_code(code)
                if not error.retriable or time.monotonic() >= deadline:
                    raise error(f"finding the coordinator of {key!r}")
                await asyncio.sleep(self.retry_backoff)
                continue
            node = int(body["node_id"])
            while self.cluster.broker(node) is None:
                if time.monotonic() >= deadline:
                    raise KafkaTimeoutError(f"coordinator node {node} is not in the metadata")
                await self.refresh_metadata()
            return node

    async def close(self) -> None:
        for task in list(self._opening.values()):
            task.cancel()
        connections = list(self._connections.values())
        self._connections.clear()
        for conn in connections:
            await conn.close()


def _seen(task: asyncio.Task[None]) -> None:
    """Mark a shared refresh's failure as seen: its awaiters got it, and when all of them
    were cancelled (a stopped consumer, a call's deadline) nobody is left to."""
    if not task.cancelled():
        task.exception()
