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

``request_percentage`` counts the time each request's handler runs (see
:mod:`kafkalite_server.quotas.handler_time`) as a percentage of one second, Kafka's
percentage of one request thread, for every request of a client but the login, the version
handshake and the brokers' own requests; its throttle time goes in any response with a
``throttle_time_ms`` field. Handlers are timed only while some entity has such a quota.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafkalite.protocol import ApiKey
from kafkalite_server.quotas.client_quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    QuotaConfigs,
    QuotaEntity,
    applicable,
)
from kafkalite_server.quotas.rate import RateMeter


def quota_user(principal: str) -> str:
    """The user a quota names: the principal's name (``ANONYMOUS`` without authentication)."""
    return principal.partition(":")[2] or principal


class ClientThrottles:
    def __init__(self, quotas: Callable[[], QuotaConfigs], window_s: float = 1.0,
                 windows: int = 11, now: Callable[[], float] = time.monotonic) -> None:
        """``quotas()`` is every entity's quotas now; rates are measured over ``windows``
        windows of ``window_s`` seconds."""
        self._quotas = quotas
        self._window_s = window_s
        self._windows = windows
        self._now = now
        self._meters: dict[tuple[str, QuotaEntity], RateMeter] = {}
        self._swept = now()
        self._timing_checked_for: QuotaConfigs | None = None
        self._timing = False

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
            meter = self._meters[key, entity] = RateMeter(self._window_s, self._windows)
        meter.record(amount, now)
        rate = meter.rate(now)
        if rate <= limit:
            return 0
        span = meter.span(now)
        return round(min((rate - limit) / limit * span,
                         self._window_s * self._windows) * 1000)

    def rate(self, key: str, user: str, client_id: str) -> float:
        """The measured rate of the connection's ``key`` quota entity (0 without a quota)."""
        found = applicable(self._quotas(), key, user, client_id)
        meter = None if found is None else self._meters.get((key, found[1]))
        return 0.0 if meter is None else meter.rate(self._now())

    def _sweep(self, now: float) -> None:
        """Forgets the meters of entities idle for the whole span (client ids come and go)."""
        if now - self._swept < self._window_s * self._windows:
            return
        self._swept = now
        for entity, meter in list(self._meters.items()):
            if meter.rate(now) == 0:
                del self._meters[entity]

    @property
    def times_requests(self) -> bool:
        """Does any entity have a ``request_percentage`` quota (so handlers are timed)?"""
        quotas = self._quotas()
        if quotas is not self._timing_checked_for:
            self._timing_checked_for = quotas
            self._timing = any(REQUEST_PERCENTAGE in values for values in quotas.values())
        return self._timing

    def throttle(self, api_key: int, body: dict[str, Any], response: dict[str, Any] | None,
                 request_bytes: int, principal: str, client_id: str | None,
                 handler_seconds: float | None = None) -> int:
        """Records a Produce's or a consumer Fetch's bytes, and ``handler_seconds`` (the
        time its handler ran, when timed) as a percentage of one second, then sets the
        longer throttle time they earned in the response (keeping a longer one already
        there); returns it (ms). An acks=0 Produce has no response: its connection is
        muted all the same."""
        if not self._quotas():
            return 0
        user, client = quota_user(principal), client_id or ""
        throttle_ms = 0
        if api_key == ApiKey.PRODUCE:
            throttle_ms = self.record(PRODUCER_BYTE_RATE, user, client, request_bytes)
        elif api_key == ApiKey.FETCH and body["replica_id"] < 0 and response is not None:
            throttle_ms = self.record(CONSUMER_BYTE_RATE, user, client,
                                      _fetched_bytes(response))
        if handler_seconds is not None:
            throttle_ms = max(throttle_ms, self.record(REQUEST_PERCENTAGE, user, client,
                                                       handler_seconds * 100))
        if throttle_ms and response is not None and "throttle_time_ms" in response:
            response["throttle_time_ms"] = max(response["throttle_time_ms"], throttle_ms)
        return throttle_ms


EXEMPT_FROM_REQUEST_QUOTAS = frozenset({
    ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
    ApiKey.CONTROLLED_SHUTDOWN, ApiKey.WRITE_TXN_MARKERS,
    ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE,
    ApiKey.WRITE_SHARE_GROUP_STATE, ApiKey.DELETE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY})
"""Not counted against ``request_percentage``: the login and version handshake (before a
client knows it is throttled), and what brokers ask each other."""


def counts_handler_time(api_key: int, body: dict[str, Any]) -> bool:
    """Is this request's handler time a client's, counted against ``request_percentage``?
    (A follower's Fetch is replication.)"""
    if api_key in EXEMPT_FROM_REQUEST_QUOTAS:
        return False
    return api_key != ApiKey.FETCH or body["replica_id"] < 0


def _fetched_bytes(response: dict[str, Any]) -> int:
    return sum(len(partition["records"]) for topic in response.get("responses", ())
               for partition in topic["partitions"] if partition["records"] is not None)
