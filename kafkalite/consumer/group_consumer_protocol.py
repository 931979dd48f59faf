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
from kafkalite.consumer.heartbeat_membership import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    Assignment,
    HeartbeatMembership,
    Outcome,
)
from kafkalite.consumer.listener import notify
from kafkalite.consumer.subscription_state import SubscriptionState
from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import error_for_code
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)

WAIT_STEP = 0.05
"""How often ``poll()`` looks at the heartbeat answers while it waits for them."""

class ConsumerProtocolCoordinator(ConsumerCoordinator):
    def __init__(self, client: KafkaClient, subscriptions: SubscriptionState,
                 config: Mapping[str, Any], wakeup: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._member = HeartbeatMembership(config["group_id"],
                                           config["retry_backoff_ms"] / 1000)
        self._lost = False
        self._owned_tps: set[TopicPartition] = set()
        self._reported: Assignment | None = None
        self._answered = threading.Event()
        self._remote_assignor: str | None = config["group_remote_assignor"]
        self._rack: str | None = config["client_rack"] or None
        """Sent on joining: the coordinator prefers partitions with a replica in it."""
        super().__init__(client, subscriptions, config, wakeup, clock)

    @property
    def generation_id(self) -> int:
        """The member epoch (-1 before the member joined)."""
        return self._member.epoch if self._member.epoch > 0 else -1

    @property
    def member_id(self) -> str:
        return self._member.member_id if self._member.epoch > 0 else ""

    def need_rejoin(self) -> bool:
        return False

    # -- the application's thread ----------------------------------------------------------

    def ensure_active_group(self, deadline: float) -> bool:
        """Joins, then reconciles with the latest target; True once the member owns its
        target (False at the deadline)."""
        while True:
            if self._member.fatal is not None:
                raise self._member.fatal
            node = self.ensure_coordinator(deadline)
            if node is None:
                return False
            self._client.metadata.add_topics(self._subscriptions.topics)  # to name topic ids
            with self._lock:
                self._member.active = True
                lost, self._lost = self._lost, False
                target = self._member.assignment
            self._client.wakeup()
            if lost:
                self._give_up(self._owned_tps, "on_partitions_lost")
            if target is not None and self._reconcile(target, deadline):
                return True
            self._answered.clear()
            if self._clock() >= deadline:
                return False
            self._answered.wait(min(WAIT_STEP, remaining(deadline, self._clock)))

    def _reconcile(self, target: Assignment, deadline: float) -> bool:
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
            log.info("group %r epoch %d: member %s got %s", self.group_id,
                     self._member.epoch, self._member.member_id, sorted(gained))
            listener = self._subscriptions.listener
            if listener is not None:
                notify(listener, "on_partitions_assigned", gained)
        if revoked or gained:
            self._report(target)
        return self._member.epoch > 0

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

    def _report(self, target: Assignment) -> None:
        """The next heartbeat, sent now, tells the coordinator what this member owns."""
        cluster = self._client.cluster
        owned: dict[uuid.UUID, list[int]] = {}
        for tp in self._owned_tps:
            topic_id = cluster.topic_id(tp.topic)
            if topic_id is not None:
                owned.setdefault(topic_id, []).append(tp.partition)
        with self._lock:
            self._reported = {t: tuple(sorted(ps)) for t, ps in owned.items()}
            self._member.next_at = 0.0
        self._client.wakeup()

    def _commit_identity(self) -> tuple[int, str]:
        if not self._subscriptions.is_auto_assigned:
            return -1, ""
        if self._member.epoch <= 0:
            raise CommitFailedError(
                f"group {self.group_id!r}: this consumer has not joined the group yet, so it "
                "owns no partitions to commit for; call poll() first")
        return self._member.epoch, self._member.member_id

    # -- the I/O thread ------------------------------------------------------------------------

    def _heartbeat_hook(self) -> float | None:
        node = self._coordinator.node
        now = self._clock()
        member = self._member
        with self._lock:
            if not member.active or node is None:
                return None
            stuck = member.epoch > 0 and \
                now > self._timers.last_poll + self._timers.max_poll_interval
            if stuck:
                self._forget_membership()
        if stuck:
            log.warning("group %r: poll() was not called for max_poll_interval_ms (%d ms); "
                        "leaving the group so its partitions move to live members",
                        self.group_id, self._max_poll_interval_ms)
            self._client.send(node, ApiKey.CONSUMER_GROUP_HEARTBEAT,
                              _leave_body(self.group_id, member.member_id))
            self._wakeup()
            return None
        with self._lock:
            if not member.due(now):
                return None if member.in_flight else member.next_at
            member.in_flight = True
            epoch = member.epoch
            full = epoch == JOIN_EPOCH
            subscribed = member.subscription_to_send(frozenset(self._subscriptions.topics))
            owned = self._reported if not full else {}
            self._reported = None
        future = self._client.send(node, ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": self.group_id, "member_id": member.member_id, "member_epoch": epoch,
            "instance_id": None, "rack_id": self._rack if full else None,
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
        self._member.rejoin()
        self._lost, self._member.active, self._member.next_at = True, False, 0.0

    def _on_answer(self, epoch: int, subscribed: list[str] | None, owned: Assignment | None,
                   body: dict[str, Any]) -> None:
        with self._lock:
            outcome = self._member.answered(epoch, subscribed, body, self._clock())
            if outcome is Outcome.REJOIN:
                log.info("group %r: %s; joining again", self.group_id,
                         error_for_code(body["error_code"]).__name__)
                self._lost = True
            elif outcome in (Outcome.FIND_COORDINATOR, Outcome.RETRY):
                self._reported = self._reported if self._reported is not None else owned
            if outcome is Outcome.FIND_COORDINATOR:
                self.mark_coordinator_unknown(error_for_code(body["error_code"]).__name__)
        self._answered.set()
        self._wakeup()

    def _on_failure(self, error: BaseException) -> None:
        log.debug("group %r: heartbeat failed: %s", self.group_id, error)
        with self._lock:
            self._member.failed(self._clock())
        self.mark_coordinator_unknown(error)
        self._answered.set()
        self._wakeup()

    # -- leaving -------------------------------------------------------------------------------

    def _send_leave(self) -> Future[dict[str, Any]] | None:
        with self._lock:
            self._member.active = False
            node, epoch = self._coordinator.node, self._member.epoch
            self._member.epoch, self._member.assignment = JOIN_EPOCH, None
        if node is None or epoch <= 0:
            return None
        return self._client.send(node, ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                 _leave_body(self.group_id, self._member.member_id))

    def leave_group(self, deadline: float, *, commit: bool = True) -> None:
        """Commit (auto commit), revoke everything, and leave: the partitions move at once."""
        if commit and self._auto_commit.enabled and self._member.epoch > 0:
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
