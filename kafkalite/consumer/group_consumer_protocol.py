"""A consumer's membership of a KIP-848 consumer group (``group_protocol="consumer"``).

There are no join/sync rounds and no group leader: the broker assigns. On the client's I/O
thread the member sends ConsumerGroupHeartbeat every heartbeat interval the coordinator
gives; the first one (epoch 0) joins with a member id the member draws (a UUID), its
subscription and ``group_remote_assignor``. An answer carrying an assignment sets the
member's *target*. On the application's thread, inside ``poll()``, the member reconciles
towards it incrementally: it first gives up what the target no longer holds (auto commit,
``on_partitions_revoked`` with only those partitions), then takes what it gains
(``on_partitions_assigned`` with only those), and reports what it owns in its next
heartbeat, sent at once; partitions it keeps are never revoked. A fenced or forgotten
member (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) loses its partitions
(``on_partitions_lost``) and joins again with epoch 0. Leaving is a heartbeat with epoch
-1; a member whose application did not call ``poll()`` for ``max_poll_interval_ms`` leaves
on its own (its partitions move to live members) and, at its next ``poll()``, reports them
lost and joins again. Commits carry the member epoch (OffsetCommit v9).

This class reuses :class:`~kafkalite.consumer.group.ConsumerCoordinator`'s commits and
coordinator lookup and replaces its membership.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.client.coordinator import remaining
from kafkalite.client.future import Future
from kafkalite.consumer.commits import CommitFailedError
from kafkalite.consumer.group import ConsumerCoordinator
from kafkalite.consumer.listener import notify
from kafkalite.consumer.subscription_state import SubscriptionState
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
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)

JOIN_EPOCH, LEAVE_EPOCH = 0, -1
REJOIN_ERRORS = frozenset((UnknownMemberIdError.errno, FencedMemberEpochError.errno))
COORDINATOR_ERRORS = frozenset((NotCoordinatorError.errno, CoordinatorNotAvailableError.errno))
WAIT_STEP = 0.05
"""How often ``poll()`` looks at the heartbeat answers while it waits for them."""

Target = dict[uuid.UUID, tuple[int, ...]]
"""topic id -> partitions, as the coordinator assigns them"""


class ConsumerProtocolCoordinator(ConsumerCoordinator):
    def __init__(self, client: KafkaClient, subscriptions: SubscriptionState,
                 config: Mapping[str, Any], wakeup: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._member_id = str(uuid.uuid4())
        self._epoch = JOIN_EPOCH
        self._target: Target | None = None
        """The latest assignment the coordinator sent; None until the first one."""
        self._lost = False
        self._owned_tps: set[TopicPartition] = set()
        self._reported: Target | None = None
        self._sent_topics: frozenset[str] | None = None
        self._in_flight = False
        self._active = False
        self._next_at = 0.0
        self._interval = 5.0
        self._fatal: KafkaError | None = None
        self._answered = threading.Event()
        self._remote_assignor: str | None = config["group_remote_assignor"]
        super().__init__(client, subscriptions, config, wakeup, clock)

    @property
    def generation_id(self) -> int:
        """The member epoch (-1 before the member joined)."""
        return self._epoch if self._epoch > 0 else -1

    @property
    def member_id(self) -> str:
        return self._member_id if self._epoch > 0 else ""

    def need_rejoin(self) -> bool:
        return False

    # -- the application's thread ----------------------------------------------------------

    def ensure_active_group(self, deadline: float) -> bool:
        """Joins, then reconciles with the latest target; True once the member owns its
        target (False at the deadline)."""
        while True:
            if self._fatal is not None:
                raise self._fatal
            node = self.ensure_coordinator(deadline)
            if node is None:
                return False
            self._client.metadata.add_topics(self._subscriptions.topics)  # to name topic ids
            with self._lock:
                self._active = True
                lost, self._lost = self._lost, False
                target = self._target
            self._client.wakeup()
            if lost:
                self._give_up(self._owned_tps, "on_partitions_lost")
            if target is not None and self._reconcile(target, deadline):
                return True
            self._answered.clear()
            if self._clock() >= deadline:
                return False
            self._answered.wait(min(WAIT_STEP, remaining(deadline, self._clock)))

    def _reconcile(self, target: Target, deadline: float) -> bool:
        """One step towards ``target``: revoke, then assign; True when nothing is left."""
        cluster = self._client.cluster
        wanted: set[TopicPartition] = set()
        for topic_id, partitions in target.items():
            name = cluster.topic_for_id(topic_id)
            if name is None:  # a topic the metadata does not name yet
                self._client.metadata.request_update()
                return False
            wanted.update(TopicPartition(name, p) for p in partitions)
        revoked, gained = self._owned_tps - wanted, wanted - self._owned_tps
        if revoked:
            self._give_up(revoked, "on_partitions_revoked", deadline)
        if gained:
            self._owned_tps |= gained
            self._subscriptions.assign_from_subscribed(self._owned_tps)
            self._auto_commit.reset()
            log.info("group %r epoch %d: member %s got %s", self.group_id, self._epoch,
                     self._member_id, sorted(gained))
            listener = self._subscriptions.listener
            if listener is not None:
                notify(listener, "on_partitions_assigned", gained)
        if revoked or gained:
            self._report(target)
        return self._epoch > 0

    def _give_up(self, partitions: set[TopicPartition], hook: str,
                 deadline: float | None = None) -> None:
        """Commits what was consumed of ``partitions`` (unless lost), tells the listener,
        and stops fetching them."""
        if not partitions:
            return
        if deadline is not None and self._auto_commit.enabled:
            consumed = {tp: o for tp, o in self._subscriptions.all_consumed().items()
                        if tp in partitions}
            try:
                self.commit_sync(consumed, deadline)
            except KafkaError as exc:
                log.warning("group %r: commit before revoking failed: %s", self.group_id, exc)
        listener = self._subscriptions.listener
        if listener is not None:
            notify(listener, hook, set(partitions))
        self._owned_tps -= partitions
        self._subscriptions.assign_from_subscribed(self._owned_tps)

    def _report(self, target: Target) -> None:
        """The next heartbeat, sent now, tells the coordinator what this member owns."""
        cluster = self._client.cluster
        owned: dict[uuid.UUID, list[int]] = {}
        for tp in self._owned_tps:
            topic_id = cluster.topic_id(tp.topic)
            if topic_id is not None:
                owned.setdefault(topic_id, []).append(tp.partition)
        with self._lock:
            self._reported = {t: tuple(sorted(ps)) for t, ps in owned.items()}
            self._next_at = 0.0
        self._client.wakeup()

    def _commit_identity(self) -> tuple[int, str]:
        if not self._subscriptions.is_auto_assigned:
            return -1, ""
        if self._epoch <= 0:
            raise CommitFailedError(
                f"group {self.group_id!r}: this consumer has not joined the group yet, so it "
                "owns no partitions to commit for; call poll() first")
        return self._epoch, self._member_id

    # -- the I/O thread ------------------------------------------------------------------------

    def _heartbeat_hook(self) -> float | None:
        node = self._coordinator.node
        now = self._clock()
        with self._lock:
            if not self._active or node is None:
                return None
            stuck = self._epoch > 0 and \
                now > self._timers.last_poll + self._timers.max_poll_interval
            if stuck:
                self._forget_membership()
        if stuck:
            log.warning("group %r: poll() was not called for max_poll_interval_ms (%d ms); "
                        "leaving the group so its partitions move to live members",
                        self.group_id, self._max_poll_interval_ms)
            self._client.send(node, ApiKey.CONSUMER_GROUP_HEARTBEAT,
                              _leave_body(self.group_id, self._member_id))
            self._wakeup()
            return None
        with self._lock:
            if self._in_flight:
                return None
            if now < self._next_at:
                return self._next_at
            self._in_flight = True
            epoch = self._epoch
            topics = self._subscriptions.topics
            full = epoch == JOIN_EPOCH
            subscribed = sorted(topics) if full or topics != self._sent_topics else None
            owned = self._reported if not full else {}
            self._reported = None
        future = self._client.send(node, ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": self.group_id, "member_id": self._member_id, "member_epoch": epoch,
            "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": self._max_poll_interval_ms if full else -1,
            "subscribed_topic_names": subscribed, "subscribed_topic_regex": None,
            "server_assignor": self._remote_assignor if full else None,
            "topic_partitions": None if owned is None else [
                {"topic_id": t, "partitions": list(ps)} for t, ps in sorted(owned.items())]})
        future.add_callback(self._on_answer, epoch, subscribed, owned)
        future.add_errback(self._on_failure)
        return None

    def _forget_membership(self) -> None:
        """poll() was not called for max_poll_interval_ms: the member leaves (epoch -1) so
        its partitions move to live members; the next poll() reports them lost and joins
        again. The caller holds the lock."""
        self._epoch, self._target, self._lost = JOIN_EPOCH, None, True
        self._sent_topics, self._active, self._next_at = None, False, 0.0

    def _on_answer(self, epoch: int, subscribed: list[str] | None, owned: Target | None,
                   body: dict[str, Any]) -> None:
        code = body["error_code"]
        with self._lock:
            self._in_flight = False
            now = self._clock()
            if code == 0:
                self._interval = max(body["heartbeat_interval_ms"], 100) / 1000
                self._next_at = now + self._interval
                if subscribed is not None:
                    self._sent_topics = frozenset(subscribed)
                if epoch != LEAVE_EPOCH and self._active:
                    self._epoch = body["member_epoch"]
                    if body["assignment"] is not None:
                        self._target = {entry["topic_id"]: tuple(entry["partitions"])
                                        for entry in body["assignment"]["topic_partitions"]}
            elif code in REJOIN_ERRORS:
                log.info("group %r: %s; joining again", self.group_id,
                         error_for_code(code).__name__)
                self._epoch, self._target, self._lost = JOIN_EPOCH, None, True
                self._sent_topics, self._next_at = None, now
            elif code in COORDINATOR_ERRORS:
                self.mark_coordinator_unknown(error_for_code(code).__name__)
                self._reported = self._reported if self._reported is not None else owned
                self._next_at = now
            elif code == CoordinatorLoadInProgressError.errno or error_for_code(code).retriable:
                self._reported = self._reported if self._reported is not None else owned
                self._next_at = now + self._retry_backoff
            else:
                self._fatal = error_for_code(code)(
                    body.get("error_message") or f"group {self.group_id!r}")
                self._active = False
        self._answered.set()
        self._wakeup()

    def _on_failure(self, error: BaseException) -> None:
        log.debug("group %r: heartbeat failed: %s", self.group_id, error)
        with self._lock:
            self._in_flight = False
            self._next_at = self._clock() + self._retry_backoff
        self.mark_coordinator_unknown(error)
        self._answered.set()
        self._wakeup()

    # -- leaving -------------------------------------------------------------------------------

    def _send_leave(self) -> Future[dict[str, Any]] | None:
        with self._lock:
            self._active = False
            node, epoch = self._coordinator.node, self._epoch
            self._epoch, self._target = JOIN_EPOCH, None
        if node is None or epoch <= 0:
            return None
        return self._client.send(node, ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                 _leave_body(self.group_id, self._member_id))

    def leave_group(self, deadline: float, *, commit: bool = True) -> None:
        """Commit (auto commit), revoke everything, and leave: the partitions move at once."""
        if commit and self._auto_commit.enabled and self._epoch > 0:
            try:
                self.commit_sync(None, deadline)
            except KafkaError as exc:
                log.warning("group %r: final auto commit failed: %s", self.group_id, exc)
        self._give_up(set(self._owned_tps), "on_partitions_revoked")
        future = self._send_leave()
        if future is not None:
            future.wait(remaining(deadline, self._clock))
        self.run_commit_callbacks()


def _leave_body(group_id: str, member_id: str) -> dict[str, Any]:
    return {"group_id": group_id, "member_id": member_id, "member_epoch": LEAVE_EPOCH,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1,
            "subscribed_topic_names": None, "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": None}
