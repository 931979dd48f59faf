"""A consumer's place in its group, as a sans-IO state machine: which state the member is in,
its generation and member id, and when it may retry a join.

The I/O driver (:mod:`kafkalite.consumer.group`) sends JoinGroup / SyncGroup / Heartbeat /
LeaveGroup and reports what came back as :class:`Event` s; every state change is a row of
:data:`TRANSITIONS`, so a reader sees the whole protocol in one table and a test can walk it
with a fake clock. Nothing here touches a socket, a thread or the real clock.

States:

- ``UNJOINED``: no generation. The next join first revokes what the member held.
- ``JOINING``: a rebalance is under way for this member: a JoinGroup is due or in flight.
- ``AWAITING_SYNC``: JoinGroup answered (generation known), SyncGroup in flight.
- ``STABLE``: the member has its assignment and heartbeats.
- ``REJOIN_DUE``: still the holder of its assignment (it heartbeats and may commit), but
  the group asked for a rebalance; the next ``poll()`` rejoins.

A fencing answer (unknown member, illegal generation) drops the generation. Outside a
rebalance that makes the member ``UNJOINED``; inside one it stays ``JOINING``, since its
partitions were already revoked when the rebalance began.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable

from kafkalite.errors import IllegalStateError

NO_GENERATION = -1


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    AWAITING_SYNC = "awaiting_sync"
    STABLE = "stable"
    REJOIN_DUE = "rejoin_due"


class Event(enum.Enum):
    JOIN_SENT = "join_sent"
    """A JoinGroup went out."""
    JOINED = "joined"
    """JoinGroup answered with a generation; SyncGroup follows."""
    SYNCED = "synced"
    """SyncGroup answered with this member's assignment."""
    REJOIN = "rejoin"
    """The group is rebalancing, or a join step failed in a way a new JoinGroup fixes."""
    FENCED = "fenced"
    """The coordinator no longer knows this member or its generation."""
    LEFT = "left"
    """The member left (close, unsubscribe, or poll() not called within max_poll_interval_ms)."""


_S, _E = MemberState, Event
TRANSITIONS: dict[tuple[MemberState, Event], MemberState] = {
    (_S.UNJOINED, _E.JOIN_SENT): _S.JOINING,
    (_S.UNJOINED, _E.REJOIN): _S.UNJOINED,
    (_S.UNJOINED, _E.FENCED): _S.UNJOINED,
    (_S.UNJOINED, _E.LEFT): _S.UNJOINED,

    (_S.JOINING, _E.JOIN_SENT): _S.JOINING,
    (_S.JOINING, _E.JOINED): _S.AWAITING_SYNC,
    (_S.JOINING, _E.REJOIN): _S.JOINING,
    (_S.JOINING, _E.FENCED): _S.JOINING,
    (_S.JOINING, _E.LEFT): _S.UNJOINED,

    (_S.AWAITING_SYNC, _E.SYNCED): _S.STABLE,
    (_S.AWAITING_SYNC, _E.REJOIN): _S.JOINING,
    (_S.AWAITING_SYNC, _E.FENCED): _S.JOINING,
    (_S.AWAITING_SYNC, _E.LEFT): _S.UNJOINED,

    (_S.STABLE, _E.JOIN_SENT): _S.JOINING,
    (_S.STABLE, _E.REJOIN): _S.REJOIN_DUE,
    (_S.STABLE, _E.FENCED): _S.UNJOINED,
    (_S.STABLE, _E.LEFT): _S.UNJOINED,

    (_S.REJOIN_DUE, _E.JOIN_SENT): _S.JOINING,
    (_S.REJOIN_DUE, _E.REJOIN): _S.REJOIN_DUE,
    (_S.REJOIN_DUE, _E.FENCED): _S.UNJOINED,
    (_S.REJOIN_DUE, _E.LEFT): _S.UNJOINED,
}
"""Every legal (state, event) pair and the state it leads to; anything else is a bug."""

HOLDS_ASSIGNMENT = frozenset({MemberState.STABLE, MemberState.REJOIN_DUE})
"""States in which the member owns partitions, heartbeats, and commits under its generation."""


class Membership:
    """One member's state, generation and member id; thread-safe (heartbeat callbacks run on
    the I/O thread, joins on the application's)."""

    def __init__(self, retry_backoff_ms: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._retry_backoff = retry_backoff_ms / 1000
        self._lock = threading.Lock()
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.member_id = ""
        self.last_generation = (NO_GENERATION, "")
        """The last generation this member joined, kept after it is fenced so that a late
        commit is refused by the coordinator rather than by a guess."""
        self.retry_at = 0.0

    def _fire(self, event: Event) -> MemberState:
        """Apply one transition (the caller holds the lock)."""
        target = TRANSITIONS.get((self.state, event))
        if target is None:
            raise IllegalStateError(f"group membership: {event.value} is not valid while "
                                    f"{self.state.value}")
        self.state = target
        return target

    # -- queries ----------------------------------------------------------------------------

    @property
    def holds_assignment(self) -> bool:
        return self.state in HOLDS_ASSIGNMENT

    @property
    def rejoin_needed(self) -> bool:
        return self.state is not MemberState.STABLE

    @property
    def needs_revoke(self) -> bool:
        """True when the next join starts a new rebalance (so the member first commits and
        revokes what it holds); False when it retries a join already under way."""
        return self.state in (MemberState.UNJOINED, *HOLDS_ASSIGNMENT)

    def identity(self) -> tuple[int, str]:
        """(generation, member id) now, as one consistent pair."""
        with self._lock:
            return self.generation, self.member_id

    def commit_identity(self) -> tuple[int, str] | None:
        """(generation, member id) to commit under: the current one, else the last one joined
        (the coordinator fences it); None if the member never joined."""
        with self._lock:
            if self.generation != NO_GENERATION:
                return self.generation, self.member_id
            if self.last_generation[0] != NO_GENERATION:
                return self.last_generation
            return None

    def retry_delay(self) -> float:
        """Seconds until the next join may go out (0 when it may go now)."""
        return max(self.retry_at - self._clock(), 0.0)

    # -- events -----------------------------------------------------------------------------

    def join_sent(self) -> None:
        with self._lock:
            self._fire(Event.JOIN_SENT)

    def joined(self, generation: int, member_id: str) -> None:
        with self._lock:
            self._fire(Event.JOINED)
            self.generation, self.member_id = generation, member_id
            self.last_generation = (generation, member_id)

    def synced(self) -> None:
        with self._lock:
            self._fire(Event.SYNCED)

    def rejoin(self, *, backoff: bool = False, member_id: str | None = None) -> None:
        """The group needs a new JoinGroup from this member. ``backoff``: not before
        ``retry_backoff_ms``; ``member_id``: the id the coordinator assigned (KIP-394)."""
        with self._lock:
            self._fire(Event.REJOIN)
            if member_id is not None:
                self.member_id = member_id
            if backoff:
                self.retry_at = self._clock() + self._retry_backoff

    def fenced(self, *, forget_member: bool, generation: int | None = None) -> None:
        """The coordinator refused this member's generation (``forget_member``: or its member
        id). An answer for an older ``generation`` than the current one only asks to rejoin."""
        with self._lock:
            if generation is not None and generation != self.generation:
                self._fire(Event.REJOIN)
                return
            self._fire(Event.FENCED)
            self.generation = NO_GENERATION
            if forget_member:
                self.member_id = ""

    def left(self, *, forget_member: bool) -> str:
        """The member leaves its group; the member id it left as (for LeaveGroup)."""
        with self._lock:
            member = self.member_id
            self._fire(Event.LEFT)
            self.generation = NO_GENERATION
            if forget_member:
                self.member_id = ""
            return member
