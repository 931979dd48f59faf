"""A share consumer's membership of its share group (KIP-932), on the client's I/O thread.

A share group has no join/sync rounds and no revocation: the member finds its coordinator
(FindCoordinator), then sends ShareGroupHeartbeat every heartbeat interval the coordinator
gives. The first heartbeat (epoch 0) joins with the member's id, which the member draws
itself (a UUID, as Kafka 4.1's clients do), and its subscription; an answer with an
assignment replaces the assignment at once. A fenced or forgotten member (UNKNOWN_MEMBER_ID,
FENCED_MEMBER_EPOCH) joins again with epoch 0; a coordinator that moved is looked up again.
Leaving is a heartbeat with epoch -1.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.client.coordinator import GROUP_KEY
from kafkalite.client.future import Future
from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    NotCoordinatorError,
    UnknownMemberIdError,
    error_for_code,
)

log = logging.getLogger(__name__)

JOIN_EPOCH, LEAVE_EPOCH = 0, -1
REJOIN_ERRORS = frozenset((UnknownMemberIdError.errno, FencedMemberEpochError.errno))
COORDINATOR_ERRORS = frozenset((NotCoordinatorError.errno, CoordinatorNotAvailableError.errno))

Assignment = dict[uuid.UUID, tuple[int, ...]]

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
        self.member_id = str(uuid.uuid4())
        self.epoch = JOIN_EPOCH
        self.assignment: Assignment = {}
        self._subscription: tuple[str, ...] = ()
        self._sent_subscription: tuple[str, ...] | None = None
        self._coordinator: int | None = None
        self._finding = False
        self._in_flight = False
        self._next_at = 0.0
        self._interval = 5.0
        self._backoff = client.config["retry_backoff_ms"] / 1000
        self.error: KafkaError | None = None
        """A fatal answer (an authorization error): raised by the consumer's next call."""
        self._active = False
        client.add_poll_hook(self._hook)

    def subscribe(self, topics: tuple[str, ...]) -> None:
        with self._lock:
            self._subscription = topics
            self._active = bool(topics)
            self._next_at = 0.0
        self._client.wakeup()

    @property
    def subscription(self) -> tuple[str, ...]:
        return self._subscription

    # ------------------------------------------------------------------ I/O thread

    def _hook(self) -> float | None:
        now = self._clock()
        with self._lock:
            if not self._active or self._in_flight:
                return None
            if self._coordinator is None:
                if not self._finding:
                    self._find_coordinator()
                return now + self._backoff
            if now < self._next_at:
                return self._next_at
            self._in_flight = True
            epoch = self.epoch
            subscription = None if self._sent_subscription == self._subscription \
                and epoch != JOIN_EPOCH else list(self._subscription)
            node = self._coordinator
        future = self._client.send(node, ApiKey.SHARE_GROUP_HEARTBEAT, {
            "group_id": self.group_id, "member_id": self.member_id, "member_epoch": epoch,
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
            self._next_at = self._clock() if node is not None else \
                self._clock() + self._backoff
        self._client.wakeup()

    def _on_heartbeat(self, epoch: int, subscription: list[str] | None,
                      body: dict[str, Any]) -> None:
        code = body["error_code"]
        changed = False
        with self._lock:
            self._in_flight = False
            now = self._clock()
            if code == 0:
                self._interval = max(body["heartbeat_interval_ms"], 100) / 1000
                self._next_at = now + self._interval
                if subscription is not None:
                    self._sent_subscription = tuple(subscription)
                if epoch == LEAVE_EPOCH or not self._active:
                    return
                self.epoch = body["member_epoch"]
                if body["assignment"] is not None:
                    self.assignment = {entry["topic_id"]: tuple(entry["partitions"])
                                       for entry in body["assignment"]["topic_partitions"]}
                    changed = True
            elif code in REJOIN_ERRORS:
                log.info("share group %r: %s; joining again", self.group_id,
                         error_for_code(code).__name__)
                self.epoch, self.assignment, changed = JOIN_EPOCH, {}, True
                self._next_at = now
            elif code in COORDINATOR_ERRORS:
                self._coordinator = None
                self._next_at = now
            elif code == CoordinatorLoadInProgressError.errno or error_for_code(code).retriable:
                self._next_at = now + self._backoff
            else:
                self.error = error_for_code(code)(
                    body.get("error_message") or f"share group {self.group_id!r}")
                self._active = False
        if changed:
            self._on_change()
        self._client.wakeup()

    def _on_heartbeat_failure(self, error: BaseException) -> None:
        log.debug("share group %r: heartbeat failed: %s", self.group_id, error)
        with self._lock:
            self._in_flight = False
            self._coordinator = None
            self._next_at = self._clock() + self._backoff
        self._client.wakeup()

    # ------------------------------------------------------------------ leaving

    def leave(self) -> Future[dict[str, Any]] | None:
        """Leaves the group (heartbeat with epoch -1); the answer, or None if not joined."""
        with self._lock:
            self._active = False
            node, epoch = self._coordinator, self.epoch
            self.assignment = {}
        if node is None or epoch == JOIN_EPOCH:
            return None
        return self._client.send(node, ApiKey.SHARE_GROUP_HEARTBEAT, {
            "group_id": self.group_id, "member_id": self.member_id,
            "member_epoch": LEAVE_EPOCH, "rack_id": None, "subscribed_topic_names": None})
