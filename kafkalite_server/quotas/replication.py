"""Replication throttles (KIP-73), as Kafka's ReplicationQuotaManager applies them.

Two per broker: the *leader* throttle caps the bytes this broker sends to followers of
the partitions named in their topic's ``leader.replication.throttled.replicas``, the
*follower* throttle the bytes it fetches for the partitions named in
``follower.replication.throttled.replicas``. An entry ``partition:broker`` applies on that
broker only; ``*`` applies to every replica of the topic. The limits are the dynamic
broker configs ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` (bytes per second, unlimited by default).

Only replicas outside the ISR are throttled (a new replica catching up during a
reassignment), never an in-sync follower, so acks=all produces keep their latency. Once
the measured rate is over the limit, throttled partitions get no bytes (the leader answers
them empty; the follower leaves them out of its fetch) until it falls back under.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafkalite_server.cluster.dynamic_config import DynamicLayers
from kafkalite_server.log.config import LogConfig
from kafkalite_server.quotas.rate import RateMeter

UNLIMITED = 2**63 - 1
"""Kafka's default for the rates (Long.MAX_VALUE): no throttle."""
EVERY_REPLICA = "*"


@functools.lru_cache(maxsize=1024)
def throttled_partitions(replicas: str, broker_id: int) -> frozenset[int] | None:
    """The partitions a ``*.replication.throttled.replicas`` value throttles on
    ``broker_id``; None for ``*`` (every partition)."""
    entries = [entry.strip() for entry in replicas.split(",") if entry.strip()]
    if entries == [EVERY_REPLICA]:
        return None
    found = set()
    for entry in entries:
        partition, _, broker = entry.partition(":")
        if broker.strip() == str(broker_id):
            found.add(int(partition))
    return frozenset(found)


class ReplicationQuota:
    def __init__(self, broker_id: int, limit: Callable[[], int],
                 throttled_replicas: Callable[[str], str],
                 now: Callable[[], float] = time.monotonic) -> None:
        """``limit()`` is the rate now (bytes/s); ``throttled_replicas(topic)`` the topic's
        list of throttled replicas."""
        self.broker_id = broker_id
        self._limit = limit
        self._throttled_replicas = throttled_replicas
        self._now = now
        self.meter = RateMeter()

    def is_throttled(self, topic: str, partition: int) -> bool:
        replicas = self._throttled_replicas(topic)
        if not replicas:
            return False
        chosen = throttled_partitions(replicas, self.broker_id)
        return chosen is None or partition in chosen

    def exceeded(self) -> bool:
        limit = self._limit()
        return limit < UNLIMITED and self.meter.rate(self._now()) > limit

    def record(self, size: int) -> None:
        if size:
            self.meter.record(size, self._now())


def unthrottled(broker_id: int) -> ReplicationQuota:
    """A quota that never throttles (tests, and brokers built without configs)."""
    return ReplicationQuota(broker_id, lambda: UNLIMITED, lambda _topic: "")


@dataclass(frozen=True, slots=True)
class ReplicationQuotas:
    """A broker's two throttles."""

    leader: ReplicationQuota
    follower: ReplicationQuota

    @classmethod
    def unthrottled(cls, broker_id: int) -> ReplicationQuotas:
        """Quotas that never throttle (brokers built without dynamic configs)."""
        return cls(unthrottled(broker_id), unthrottled(broker_id))


def broker_quotas(broker_id: int, layers: Callable[[], DynamicLayers],
                  topic_config: Callable[[str], LogConfig]) -> ReplicationQuotas:
    """The throttles of a broker: rates from its dynamic configs (``layers()``, as last
    read: its own over the cluster-wide ones), throttled replicas from each topic's
    configs."""
    def rate(key: str) -> Callable[[], int]:
        return lambda: int(layers().value(broker_id, key) or UNLIMITED)
    return ReplicationQuotas(
        ReplicationQuota(broker_id, rate("leader.replication.throttled.rate"),
                         lambda topic: topic_config(topic).leader_replication_throttled_replicas),
        ReplicationQuota(broker_id, rate("follower.replication.throttled.rate"),
                         lambda topic: topic_config(topic).follower_replication_throttled_replicas))
