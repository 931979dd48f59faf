"""Finding a group's coordinator: FindCoordinator with retries, and the node it named, cached.

Both the consumer (its group) and the AdminClient (any group it is asked about) need the
broker that coordinates a group; this is the one place that asks for it. The lookup retries
retriable errors until a deadline and waits until the named node is in the metadata, so the
caller can route requests to it straight away.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from kafkalite.client.client import KafkaClient
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import error_for_code

_random = random.Random()
"""Not the global generator: that one is the application's (it may seed it)."""

log = logging.getLogger(__name__)

GROUP_KEY = 0
"""FindCoordinator's key type for a consumer group."""
TRANSACTION_KEY = 1
"""FindCoordinator's key type for a transactional id."""


def remaining(deadline: float, clock: Callable[[], float] = time.monotonic) -> float:
    """Seconds left until ``deadline`` (never negative)."""
    return max(deadline - clock(), 0.0)


def backoff(client: KafkaClient, deadline: float) -> None:
    """Sleep ``retry_backoff_ms`` before a retry; a timeout if that would pass the deadline."""
    delay = client.config["retry_backoff_ms"] / 1000
    if time.monotonic() + delay >= deadline:
        raise client.timeout_error("the group coordinator did not answer in time")
    time.sleep(delay)


def _any_node(client: KafkaClient) -> int:
    """A broker from metadata, else the first bootstrap address (node -1)."""
    brokers = [b.node_id for b in client.cluster.brokers()]
    return _random.choice(brokers) if brokers else -1


def find_coordinator(client: KafkaClient, group_id: str, deadline: float, *,
                     key_type: int = GROUP_KEY) -> int:
    """The node id of the coordinator of ``group_id`` (a group, or with ``key_type``
    TRANSACTION_KEY a transactional id): FindCoordinator, retried until the deadline;
    metadata is refreshed until that node is known, so requests can be routed to it."""
    while True:
        try:
            body = client.send(_any_node(client), ApiKey.FIND_COORDINATOR,
                               {"key": group_id, "key_type": key_type,
                                "coordinator_keys": [group_id]}).get(remaining(deadline))
        except KafkaError as exc:
            if not exc.retriable:
                raise
            client.metadata.request_update()
            backoff(client, deadline)
            continue
        if body.get("coordinators"):  # v4+: one entry per key asked
            body = body["coordinators"][0]
        code = body["error_code"]
        if code:
            error = error_for_code(code)
            if not error.retriable:
                raise error(f"finding the coordinator of {group_id!r}")
            backoff(client, deadline)
            continue
        node = body["node_id"]
        while client.cluster.broker(node) is None:
            left = remaining(deadline)
            if left <= 0:
                raise client.timeout_error(f"coordinator node {node} is not in the metadata")
            version = client.metadata.request_update()
            try:
                client.metadata.await_update(version, min(left, 1.0))
            except KafkaTimeoutError:
                continue
        return int(node)


class CoordinatorCache:
    """One group's coordinator, looked up on demand and forgotten when it stops answering.

    Read from the application's thread (joins, commits) and the I/O thread (heartbeats), so
    the cached node sits behind a lock. A lookup always gets at least two retry backoffs, so a
    short deadline (``poll(timeout_ms=0)``) still gives the coordinator a chance to answer.
    """

    def __init__(self, client: KafkaClient, group_id: str) -> None:
        self._client = client
        self.group_id = group_id
        self._lock = threading.Lock()
        self._node: int | None = None
        self._min_wait = client.config["retry_backoff_ms"] / 1000 * 2

    @property
    def node(self) -> int | None:
        """The known coordinator, None until found (or after it was marked unknown)."""
        return self._node

    def ensure(self, deadline: float) -> int | None:
        """The coordinator's node id, looked up if unknown; None if not found by the deadline."""
        node = self._node
        if node is not None:
            return node
        try:
            node = find_coordinator(self._client, self.group_id,
                                    max(deadline, time.monotonic() + self._min_wait))
        except KafkaTimeoutError:
            return None
        with self._lock:
            self._node = node
        return node

    def mark_unknown(self, reason: object) -> None:
        """Forget the coordinator (it moved, or its connection failed); the next use looks
        it up again."""
        with self._lock:
            if self._node is not None:
                log.info("group %r: coordinator %s unavailable (%s); rediscovering",
                         self.group_id, self._node, reason)
            self._node = None
