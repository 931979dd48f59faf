"""Enforcing byte-rate client quotas, as Kafka's ClientQuotaManager does. Pure: time comes
from ``now``.

Each Produce counts its request size against ``producer_byte_rate``, each consumer Fetch
its records against ``consumer_byte_rate``, in a :class:`RateMeter` per quota entity
(``quota.window.num`` = 11 windows of ``quota.window.size.seconds`` = 1 s). Once the
measured rate is over the quota, the response carries the time it takes the rate to fall
back to it, ``(rate - quota) / quota * measured span``, at most the whole span (11 s); the
connection then reads nothing more for that time (KIP-219, see
:mod:`kafkalite_server.network.connection`), so a client that ignores ``throttle_time_ms``
is held back all the same. Follower fetches are not client traffic: replication throttles
(:mod:`kafkalite_server.quotas.replication`) cover them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafkalite.protocol import ApiKey
from kafkalite_server.quotas.client_quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    QuotaConfigs,
    QuotaEntity,
    applicable,
)
from kafkalite_server.quotas.rate import RateMeter

WINDOW_S = 1.0
WINDOWS = 11


def quota_user(principal: str) -> str:
    """The user a quota names: the principal's name (``ANONYMOUS`` without authentication)."""
    return principal.partition(":")[2] or principal


class ClientThrottles:
    def __init__(self, quotas: Callable[[], QuotaConfigs],
                 now: Callable[[], float] = time.monotonic) -> None:
        """``quotas()`` is every entity's quotas now."""
        self._quotas = quotas
        self._now = now
        self._meters: dict[tuple[str, QuotaEntity], RateMeter] = {}
        self._swept = now()

    def record(self, key: str, user: str, client_id: str, amount: float) -> int:
        """Counts ``amount`` against the connection's ``key`` quota; the throttle time (ms)
        it has earned, 0 without a quota or within it."""
        found = applicable(self._quotas(), key, user, client_id)
        if found is None:
            return 0
        limit, entity = found
        now = self._now()
        self._sweep(now)
        meter = self._meters.get((key, entity))
        if meter is None:
            meter = self._meters[key, entity] = RateMeter(WINDOW_S, WINDOWS)
        meter.record(amount, now)
        rate = meter.rate(now)
        if rate <= limit:
            return 0
        span = meter.span(now)
        return round(min((rate - limit) / limit * span, WINDOW_S * WINDOWS) * 1000)

    def rate(self, key: str, user: str, client_id: str) -> float:
        """The measured rate of the connection's ``key`` quota entity (0 without a quota)."""
        found = applicable(self._quotas(), key, user, client_id)
        meter = None if found is None else self._meters.get((key, found[1]))
        return 0.0 if meter is None else meter.rate(self._now())

    def _sweep(self, now: float) -> None:
        """Forgets the meters of entities idle for the whole span (client ids come and go)."""
        if now - self._swept < WINDOW_S * WINDOWS:
            return
        self._swept = now
        for entity, meter in list(self._meters.items()):
            if meter.rate(now) == 0:
                del self._meters[entity]

    def throttle(self, api_key: int, body: dict[str, Any], response: dict[str, Any],
                 request_bytes: int, principal: str, client_id: str | None) -> int:
        """Records a Produce's or a consumer Fetch's bytes, and sets the throttle time it
        earned in its response (keeping a longer one already there); returns it (ms)."""
        if api_key == ApiKey.PRODUCE:
            key, amount = PRODUCER_BYTE_RATE, request_bytes
        elif api_key == ApiKey.FETCH and body["replica_id"] < 0:
            key, amount = CONSUMER_BYTE_RATE, _fetched_bytes(response)
        else:
            return 0
        throttle_ms = self.record(key, quota_user(principal), client_id or "", amount)
        if throttle_ms:
            response["throttle_time_ms"] = max(response.get("throttle_time_ms", 0),
                                               throttle_ms)
        return throttle_ms


def _fetched_bytes(response: dict[str, Any]) -> int:
    return sum(len(partition["records"]) for topic in response.get("responses", ())
               for partition in topic["partitions"] if partition["records"] is not None)
