"""How a consumer-group member moves from its current assignment to its target one
(KIP-848's incremental reconciliation), pure.

A partition is never owned by two members: a member first gives up (revokes) what its
target no longer holds, and receives a partition only once its previous owner has released
it. The member's state says where it is on that path (the values Kafka persists in
ConsumerGroupCurrentMemberAssignmentValue.state):

- STABLE: it owns its whole target at the target epoch;
- UNREVOKED_PARTITIONS: it must revoke ``pending_revocation`` and acknowledge it (a
  heartbeat whose owned partitions no longer hold them) before it gets anything new; its
  epoch stays behind the target's until then;
- UNRELEASED_PARTITIONS: it is at the target epoch but some of its target partitions are
  still owned by other members that have not revoked them yet.

:data:`TRANSITIONS` is the whole machine: for a member's state and what happened, whether
its next assignment is computed again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, IntEnum

from kafkalite_server.group.consumer_assignors import Assignment


class MemberState(IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 2
    UNRELEASED_PARTITIONS = 3


class Trigger(Enum):
    """What a heartbeat tells the reconciliation."""

    TARGET_MOVED = "the target epoch is ahead of the member's"
    REVOCATION_ACKNOWLEDGED = "the member no longer owns what it had to revoke"
    NOTHING_NEW = "neither of the above"


TRANSITIONS: dict[tuple[MemberState, Trigger], bool] = {
    (MemberState.STABLE, Trigger.TARGET_MOVED): True,
    (MemberState.STABLE, Trigger.REVOCATION_ACKNOWLEDGED): True,
    (MemberState.STABLE, Trigger.NOTHING_NEW): False,
    (MemberState.UNREVOKED_PARTITIONS, Trigger.TARGET_MOVED): False,
    (MemberState.UNREVOKED_PARTITIONS, Trigger.REVOCATION_ACKNOWLEDGED): True,
    (MemberState.UNREVOKED_PARTITIONS, Trigger.NOTHING_NEW): False,
    (MemberState.UNRELEASED_PARTITIONS, Trigger.TARGET_MOVED): True,
    (MemberState.UNRELEASED_PARTITIONS, Trigger.REVOCATION_ACKNOWLEDGED): True,
    (MemberState.UNRELEASED_PARTITIONS, Trigger.NOTHING_NEW): True,
}
"""(state, trigger) -> compute the next assignment? An unacknowledged revocation holds the
member where it is (even if the target moves again: it must give up what it was asked to
first); a member waiting for released partitions looks again on every heartbeat. When
computed, the next state follows from the assignment (:func:`next_assignment`)."""


@dataclass(frozen=True)
class Reconciled:
    """A member's assignment at one point of its reconciliation."""

    state: MemberState
    member_epoch: int
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)


def trigger(current: Reconciled, target_epoch: int, owned: Assignment | None) -> Trigger:
    """What this heartbeat brings; ``owned`` is the member's report (None: unchanged)."""
    if current.state is MemberState.UNREVOKED_PARTITIONS:
        if owned is not None and not _overlap(owned, current.pending_revocation):
            return Trigger.REVOCATION_ACKNOWLEDGED
        return Trigger.NOTHING_NEW
    if current.member_epoch != target_epoch:
        return Trigger.TARGET_MOVED
    return Trigger.NOTHING_NEW


def reconcile(current: Reconciled, target: Assignment, target_epoch: int, owned: Assignment | None,
              owned_elsewhere: Callable[[uuid.UUID, int], bool]) -> Reconciled:
    """The member's next assignment after a heartbeat; ``owned_elsewhere(topic, partition)``
    says whether another member still owns the partition (assigned or pending
    revocation)."""
    if not TRANSITIONS[(current.state, trigger(current, target_epoch, owned))]:
        return current
    return next_assignment(current.member_epoch, current.assigned, target, target_epoch,
                           owned_elsewhere)


def next_assignment(member_epoch: int, assigned: Assignment, target: Assignment,
                    target_epoch: int, owned_elsewhere: Callable[[uuid.UUID, int], bool]
                    ) -> Reconciled:
    """Revoke first; otherwise take every target partition that is free."""
    keep: dict[uuid.UUID, set[int]] = {}
    revoke: dict[uuid.UUID, set[int]] = {}
    unreleased = False
    for topic_id in set(assigned) | set(target):
        have, want = assigned.get(topic_id, frozenset()), target.get(topic_id, frozenset())
        keep[topic_id] = set(have & want)
        revoke[topic_id] = set(have - want)
        for partition in want - have:
            if owned_elsewhere(topic_id, partition):
                unreleased = True
            else:
                keep[topic_id].add(partition)
    if any(revoke.values()):
        return Reconciled(MemberState.UNREVOKED_PARTITIONS, member_epoch,
                          _frozen({t: have & target.get(t, frozenset())
                                   for t, have in assigned.items()}),
                          _frozen(revoke))
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Reconciled(state, target_epoch, _frozen(keep))


def _frozen(partitions: dict[uuid.UUID, set[int]] | dict[uuid.UUID, frozenset[int]]
            ) -> Assignment:
    return {t: frozenset(ps) for t, ps in partitions.items() if ps}


def _overlap(a: Assignment, b: Assignment) -> bool:
    return any(a.get(t, frozenset()) & ps for t, ps in b.items())
