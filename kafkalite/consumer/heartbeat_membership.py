"""A member's side of the modern group protocols' heartbeat, sans-IO on a clock.

KIP-848 consumer groups (ConsumerGroupHeartbeat) and KIP-932 share groups
(ShareGroupHeartbeat) keep a member the same way: there are no join or sync rounds, the
member heartbeats every interval the coordinator gives, and the first heartbeat (epoch 0)
joins with a member id the member drew itself (a UUID, as Kafka 4's clients do). What an
answer does depends only on its error code, in :data:`TRANSITIONS`:

- none: the interval, the member epoch and (when the answer carries one) the assignment;
- UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH: the member lost its place (and its assignment)
  and joins again with epoch 0 at once;
- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: the coordinator is looked up again, and the
  heartbeat sent to the new one at once;
- a retriable error (COORDINATOR_LOAD_IN_PROGRESS ...): the heartbeat is retried after the
  backoff;
- any other (an authorization error, UNSUPPORTED_ASSIGNOR ...): fatal, raised by the
  consumer's next call; the member stops heartbeating.

Each protocol's driver (:mod:`.group_consumer_protocol`, :mod:`kafkalite.share.membership`)
sends the requests, holds its own lock around these calls and acts on the outcome
(reconciliation, the rebalance listener, a share consumer's fetch sessions).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalite.errors import KafkaError
from kafkalite.protocol.errors import (
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    NotCoordinatorError,
    UnknownMemberIdError,
    error_for_code,
)

JOIN_EPOCH, LEAVE_EPOCH = 0, -1
MIN_INTERVAL = 0.1
"""The shortest heartbeat interval a member keeps, whatever the coordinator says (s)."""

Assignment = dict[uuid.UUID, tuple[int, ...]]
"""topic id -> partitions, as the coordinator assigns them"""


class Outcome(enum.Enum):
    ANSWERED = "answered"
    REJOIN = "rejoin"
    FIND_COORDINATOR = "find the coordinator"
    RETRY = "retry after the backoff"
    FATAL = "fatal"


TRANSITIONS: Mapping[int, Outcome] = {
    0: Outcome.ANSWERED,
    UnknownMemberIdError.errno: Outcome.REJOIN,
    FencedMemberEpochError.errno: Outcome.REJOIN,
    NotCoordinatorError.errno: Outcome.FIND_COORDINATOR,
    CoordinatorNotAvailableError.errno: Outcome.FIND_COORDINATOR,
}
"""An answer's error code -> what it does to the member; an error not named here is
:attr:`Outcome.RETRY` when retriable, else :attr:`Outcome.FATAL`."""


def outcome_of(code: int) -> Outcome:
    known = TRANSITIONS.get(code)
    if known is not None:
        return known
    return Outcome.RETRY if error_for_code(code).retriable else Outcome.FATAL


@dataclass
class HeartbeatMembership:
    """The member's epoch, its latest assignment and when it heartbeats next."""

    group_id: str
    retry_backoff: float
    """Seconds before a heartbeat is retried after a retriable error or a lost answer."""
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = JOIN_EPOCH
    assignment: Assignment | None = None
    """The latest assignment the coordinator sent; None until the first one, and after the
    member lost its place."""
    sent_subscription: frozenset[str] | None = None
    """The subscription the coordinator acknowledged; None: send it with the next one."""
    active: bool = False
    """Whether the member heartbeats (it subscribed and has not left)."""
    in_flight: bool = False
    next_at: float = 0.0
    interval: float = 5.0
    fatal: KafkaError | None = None

    def due(self, now: float) -> bool:
        """Whether a heartbeat is to be sent now."""
        return self.active and not self.in_flight and now >= self.next_at

    def subscription_to_send(self, topics: frozenset[str]) -> list[str] | None:
        """The subscription the next heartbeat carries: all of it on a join or a change,
        else None ("unchanged")."""
        if self.epoch == JOIN_EPOCH or topics != self.sent_subscription:
            return sorted(topics)
        return None

    def answered(self, sent_epoch: int, sent_subscription: list[str] | None,
                 body: Mapping[str, Any], now: float) -> Outcome:
        """Takes a heartbeat's answer (sent with ``sent_epoch`` and ``sent_subscription``)."""
        self.in_flight = False
        code = body["error_code"]
        outcome = outcome_of(code)
        if outcome is Outcome.ANSWERED:
            self.interval = max(body["heartbeat_interval_ms"] / 1000, MIN_INTERVAL)
            self.next_at = now + self.interval
            if sent_subscription is not None:
                self.sent_subscription = frozenset(sent_subscription)
            if sent_epoch != LEAVE_EPOCH and self.active:
                self.epoch = body["member_epoch"]
                if body["assignment"] is not None:
                    self.assignment = {entry["topic_id"]: tuple(entry["partitions"])
                                       for entry in body["assignment"]["topic_partitions"]}
        elif outcome is Outcome.REJOIN:
            self.rejoin()
            self.next_at = now
        elif outcome is Outcome.FIND_COORDINATOR:
            self.next_at = now
        elif outcome is Outcome.RETRY:
            self.next_at = now + self.retry_backoff
        else:
            self.fatal = error_for_code(code)(body.get("error_message")
                                              or f"group {self.group_id!r}")
            self.active = False
        return outcome

    def failed(self, now: float) -> None:
        """The heartbeat got no answer (the connection failed): retried after the backoff,
        at a coordinator looked up again."""
        self.in_flight = False
        self.next_at = now + self.retry_backoff

    def rejoin(self) -> None:
        """The member lost its place: it joins again with epoch 0 and all its
        subscription."""
        self.epoch, self.assignment, self.sent_subscription = JOIN_EPOCH, None, None
