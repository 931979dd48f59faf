"""A share consumer's membership of its share group (KIP-932), on the client's I/O thread.

A share group has no join/sync rounds and no revocation: the member finds its coordinator
(FindCoordinator), then sends ShareGroupHeartbeat every heartbeat interval the coordinator
gives, as a consumer-group member does (:mod:`kafkalite.consumer.heartbeat_membership`
keeps the epoch and what each answer does for both); an answer with an assignment replaces
the assignment at once. Leaving is a heartbeat with epoch -1.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.client.coordinator import GROUP_KEY
from kafkalite.client.future import Future
from kafkalite.consumer.heartbeat_membership import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    Assignment,
    HeartbeatMembership,
    Outcome,
)
from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import error_for_code

log = logging.getLogger(__name__)

_random = random.Random()


class ShareMembership:
    def __init__(self, client: KafkaClient, group_id: str, rack: str | None,
                 on_change: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self.group_id = group_id
        self._rack = rack
        self._on_change = on_change
        self._clock = clock
        self._lock = threading.Lock()
        self._backoff = client.config["retry_backoff_ms"] / 1000
        self._member = HeartbeatMembership(group_id, self._backoff)
        self._subscription: tuple[str, ...] = ()
        self._coordinator: int | None = None
        self._finding = False
        client.add_poll_hook(self._hook)

    def subscribe(self, topics: tuple[str, ...]) -> None:
        with self._lock:
            self._subscription = topics
            self._member.active = bool(topics)
            self._member.next_at = 0.0
        self._client.wakeup()

    @property
    def subscription(self) -> tuple[str, ...]:
        return self._subscription

    @property
    def member_id(self) -> str:
        return self._member.member_id

    @property
    def assignment(self) -> Assignment:
        """The partitions assigned now (none before the first assignment)."""
        return self._member.assignment or {}

    @property
    def error(self) -> KafkaError | None:
        """A fatal answer (an authorization error): raised by the consumer's next call."""
        return self._member.fatal

    # ------------------------------------------------------------------ I/O thread

    def _hook(self) -> float | None:
        now = self._clock()
        member = self._member
        with self._lock:
            if not member.active or member.in_flight:
                return None
            if self._coordinator is None:
                if not self._finding:
                    self._find_coordinator()
                return now + self._backoff
            if not member.due(now):
                return member.next_at
            member.in_flight = True
            epoch = member.epoch
            subscription = member.subscription_to_send(frozenset(self._subscription))
            node = self._coordinator
        future = self._client.send(node, ApiKey.SHARE_GROUP_HEARTBEAT, {
            "group_id": self.group_id, "member_id": member.member_id, "member_epoch": epoch,
            "rack_id": self._rack if epoch == JOIN_EPOCH else None,
            "subscribed_topic_names": subscription})
        future.add_callback(self._on_heartbeat, epoch, subscription)
        future.add_errback(self._on_heartbeat_failure)
        return None

    def _find_coordinator(self) -> None:
        brokers = [b.node_id for b in self._client.cluster.brokers()]
        node = _random.choice(brokers) if brokers else -1
        self._finding = True
        future = self._client.send(node, ApiKey.FIND_COORDINATOR, {
            "key": self.group_id, "key_type": GROUP_KEY, "coordinator_keys": [self.group_id]})
        future.add_callback(self._on_coordinator)
        future.add_errback(lambda error: self._found(None, error))

    def _on_coordinator(self, body: dict[str, Any]) -> None:
        if body.get("coordinators"):
            body = body["coordinators"][0]
        if body["error_code"]:
            self._found(None, error_for_code(body["error_code"])())
        elif self._client.cluster.broker(body["node_id"]) is None:
            self._client.metadata.request_update()
            self._found(None, None)
        else:
            self._found(int(body["node_id"]), None)

    def _found(self, node: int | None, error: BaseException | None) -> None:
        if error is not None:
            log.debug("share group %r: no coordinator yet (%s)", self.group_id, error)
        with self._lock:
            self._finding = False
            self._coordinator = node
            self._member.next_at = self._clock() if node is not None else \
                self._clock() + self._backoff
        self._client.wakeup()

    def _on_heartbeat(self, epoch: int, subscription: list[str] | None,
                      body: dict[str, Any]) -> None:
        with self._lock:
            outcome = self._member.answered(epoch, subscription, body, self._clock())
            if outcome is Outcome.REJOIN:
                log.info("share group %r: %s; joining again", self.group_id,
                         error_for_code(body["error_code"]).__name__)
            elif outcome is Outcome.FIND_COORDINATOR:
                self._coordinator = None
        changed = outcome is Outcome.REJOIN or (
            outcome is Outcome.ANSWERED and epoch != LEAVE_EPOCH
            and body["assignment"] is not None and self._member.active)
        if changed:
            self._on_change()
        self._client.wakeup()

    def _on_heartbeat_failure(self, error: BaseException) -> None:
        log.debug("share group %r: heartbeat failed: %s", self.group_id, error)
        with self._lock:
            self._member.failed(self._clock())
            self._coordinator = None
        self._client.wakeup()

    # ------------------------------------------------------------------ leaving

    def leave(self) -> Future[dict[str, Any]] | None:
        """Leaves the group (heartbeat with epoch -1); the answer, or None if not joined."""
        with self._lock:
            self._member.active = False
            node, epoch = self._coordinator, self._member.epoch
            self._member.assignment = None
        if node is None or epoch == JOIN_EPOCH:
            return None
        return self._client.send(node, ApiKey.SHARE_GROUP_HEARTBEAT, {
            "group_id": self.group_id, "member_id": self._member.member_id,
            "member_epoch": LEAVE_EPOCH, "rack_id": None, "subscribed_topic_names": None})
