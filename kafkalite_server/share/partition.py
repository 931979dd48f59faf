"""One share partition: a topic partition as one share group consumes it (Kafka's
SharePartition), sans-IO on a clock it is given.

Records below the share-partition start offset (SPSO) are done with: acknowledged or
archived. Records from the SPSO to the share-partition end offset (SPEO) are *in flight*:
each has a state (:mod:`.state`), a delivery count and, while acquired, the member holding
it and the time its lock expires. Records past the SPEO have not been handed out yet.

- :meth:`SharePartition.acquire` hands a member the available records of what the leader
  read from its log (from :meth:`~SharePartition.next_fetch_offset`), up to the member's
  ``max_records``, each locked for ``lock_duration_ms``. Offsets the log does not hold as
  deliverable records (control batches, transactions aborted under read_committed, offsets
  between batches) are archived at once: no member is ever handed them. At most
  ``max_record_locks`` offsets are in flight: past that, nothing new is acquired until the
  SPSO moves.
- :meth:`SharePartition.acknowledge` applies a member's acknowledgements (accept, release,
  reject, gap), all of a request's or none.
- :meth:`SharePartition.expire_locks` makes records whose lock expired available again;
  :meth:`SharePartition.release_member` does so for a member that left.
- A released record that was delivered ``delivery_count_limit`` times is archived.
- After every change the SPSO moves past the acknowledged and archived records at its
  head.

:meth:`SharePartition.snapshot` is the durable form (what the share coordinator stores: an
acquired record is stored available, with its delivery count, so a new leader redelivers
it), and :meth:`SharePartition.load` rebuilds a share partition from one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kafkalite.protocol.errors import InvalidRecordStateError, InvalidRequestError
from kafkalite_server.share.state import (
    ACKNOWLEDGE_EVENTS,
    FINISHED,
    TRANSITIONS,
    Event,
    PartitionState,
    RecordState,
    StateBatch,
    released_state,
)

NO_DEADLINE = -1


@dataclass(frozen=True, slots=True)
class ShareLimits:
    lock_duration_ms: int = 30_000
    """``group.share.record.lock.duration.ms``: how long an acquired record stays locked."""
    delivery_count_limit: int = 5
    """``group.share.delivery.count.limit``: deliveries before a released record is archived."""
    max_record_locks: int = 2000
    """``group.share.partition.max.record.locks``: offsets in flight at most."""


@dataclass(frozen=True, slots=True)
class LogBatch:
    """A batch of the leader's log, as acquisition needs to know it."""

    first_offset: int
    last_offset: int
    deliverable: bool = True
    """False for a control batch, and for an aborted transaction's batch under
    read_committed: its offsets are archived, never handed out."""


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """Consecutive offsets handed to a member with one delivery count (AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """One acknowledgement batch of a request: one type for the range, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class SharePartition:
    def __init__(self, limits: ShareLimits, clock: Callable[[], int]) -> None:
        self.limits = limits
        self._clock = clock
        self.state_epoch = 0
        self.start_offset = 0
        """The SPSO: every record below it is acknowledged or archived."""
        self._states: list[RecordState] = []
        """Index i: the record at ``start_offset + i``; the last one is the SPEO."""
        self._counts: list[int] = []
        self._owners: list[str | None] = []
        self._deadlines: list[int] = []
        self._next_deadline: int | None = None
        """No lock expires before this (it may be earlier than the earliest lock: records
        acknowledged since; :meth:`expire_locks` makes it exact again)."""

    # ------------------------------------------------------------------ durable form

    def load(self, state: PartitionState) -> None:
        """Start from a stored state (the SPSO and the in-flight records' states)."""
        self.state_epoch = state.state_epoch
        self.start_offset = max(state.start_offset, 0)
        end = max((b.last_offset for b in state.batches), default=self.start_offset - 1)
        size = end - self.start_offset + 1
        self._states = [RecordState.AVAILABLE] * size
        self._counts = [0] * size
        self._owners = [None] * size
        self._deadlines = [NO_DEADLINE] * size
        for batch in state.batches:
            for offset in range(max(batch.first_offset, self.start_offset),
                                batch.last_offset + 1):
                index = offset - self.start_offset
                self._states[index] = RecordState(batch.delivery_state)
                self._counts[index] = batch.delivery_count
        self._advance_start()

    def snapshot(self, leader_epoch: int = -1) -> PartitionState:
        """The durable form; acquired records stored available (a new leader redelivers)."""
        batches: list[StateBatch] = []
        first, run = self.start_offset, None
        for offset, (state, count) in enumerate(zip(self._states, self._counts, strict=True),
                                                self.start_offset):
            stored = (int(RecordState.AVAILABLE if state is RecordState.ACQUIRED else state),
                      count)
            if stored != run:
                if run is not None:
                    batches.append(StateBatch(first, offset - 1, *run))
                first, run = offset, stored
        if run is not None:
            batches.append(StateBatch(first, self.end_offset, *run))
        return PartitionState(self.state_epoch, self.start_offset, leader_epoch,
                              tuple(batches))

    # ------------------------------------------------------------------ reading

    @property
    def end_offset(self) -> int:
        """The SPEO: the last offset in flight (``start_offset - 1`` when none is)."""
        return self.start_offset + len(self._states) - 1

    @property
    def in_flight(self) -> int:
        return len(self._states)

    def state_of(self, offset: int) -> RecordState:
        if offset < self.start_offset:
            return RecordState.ARCHIVED  # acknowledged or archived: done with either way
        index = offset - self.start_offset
        return self._states[index] if index < len(self._states) else RecordState.AVAILABLE

    def delivery_count(self, offset: int) -> int:
        index = offset - self.start_offset
        return self._counts[index] if 0 <= index < len(self._counts) else 0

    def owner(self, offset: int) -> str | None:
        index = offset - self.start_offset
        return self._owners[index] if 0 <= index < len(self._owners) else None

    def next_fetch_offset(self) -> int:
        """Where the leader reads from: the first available record in flight, else the
        record after the SPEO."""
        for index, state in enumerate(self._states):
            if state is RecordState.AVAILABLE:
                return self.start_offset + index
        return self.end_offset + 1

    def can_acquire(self) -> bool:
        return (self.next_fetch_offset() <= self.end_offset
                or len(self._states) < self.limits.max_record_locks)

    def next_lock_deadline(self) -> int | None:
        """No lock expires before this time (None: no record is locked). Cheap: a broker
        asks every share partition it leads, often."""
        return self._next_deadline

    def acquired_by(self, member_id: str) -> int:
        return sum(1 for owner, state in zip(self._owners, self._states, strict=True)
                   if owner == member_id and state is RecordState.ACQUIRED)

    # ------------------------------------------------------------------ transitions

    def acquire(self, member_id: str, batches: Iterable[LogBatch],
                max_records: int) -> list[AcquiredRange]:
        """Hands ``member_id`` the available records among ``batches`` (read from the log
        at :meth:`next_fetch_offset` or later), at most ``max_records``."""
        deadline = self._clock() + self.limits.lock_duration_ms
        acquired: list[int] = []
        for batch in batches:
            if len(acquired) >= max_records:
                break
            if batch.first_offset > self.end_offset + 1 \
                    and not self._archive_through(batch.first_offset - 1):
                break  # offsets between batches hold no record
            offset = max(batch.first_offset, self.start_offset)
            while offset <= batch.last_offset and len(acquired) < max_records:
                if offset > self.end_offset and not self._admit(offset):
                    break
                index = offset - self.start_offset
                if self._states[index] is RecordState.AVAILABLE:
                    if batch.deliverable:
                        self._transition(index, Event.ACQUIRE)
                        self._counts[index] += 1
                        self._owners[index] = member_id
                        self._deadlines[index] = deadline
                        acquired.append(offset)
                        if self._next_deadline is None or deadline < self._next_deadline:
                            self._next_deadline = deadline
                    else:
                        self._states[index] = RecordState.ARCHIVED
                offset += 1
        self._advance_start()
        return self._ranges(acquired)

    def acknowledge(self, member_id: str, acknowledgements: Sequence[Acknowledgement]) -> int:
        """Applies every acknowledgement of one request to this partition, or none of them:
        0, INVALID_REQUEST (malformed batches) or INVALID_RECORD_STATE (a record this member
        does not hold, e.g. one whose lock expired)."""
        planned: list[tuple[int, Event]] = []
        previous_last: int | None = None
        for ack in acknowledgements:
            size = ack.last_offset - ack.first_offset + 1
            if size <= 0 or len(ack.types) not in (1, size) \
                    or (previous_last is not None and ack.first_offset <= previous_last) \
                    or any(kind not in ACKNOWLEDGE_EVENTS for kind in ack.types):
                return InvalidRequestError.errno
            previous_last = ack.last_offset
            for position in range(size):
                offset = ack.first_offset + position
                if offset < self.start_offset:
                    continue  # done with already: nothing left to acknowledge
                index = offset - self.start_offset
                if index >= len(self._states) or self._states[index] is not RecordState.ACQUIRED \
                        or self._owners[index] != member_id:
                    return InvalidRecordStateError.errno
                kind = ack.types[0] if len(ack.types) == 1 else ack.types[position]
                planned.append((index, Event(kind)))
        for index, event in planned:
            self._transition(index, event)
        self._advance_start()
        return 0

    def expire_locks(self) -> bool:
        """Records whose lock expired become available (or archived at the delivery limit);
        True if any did."""
        now = self._clock()
        expired = [i for i, (state, deadline) in enumerate(zip(self._states, self._deadlines,
                                                                strict=True))
                   if state is RecordState.ACQUIRED and deadline <= now]
        for index in expired:
            self._transition(index, Event.LOCK_EXPIRED)
        self._advance_start()
        deadlines = [d for d, s in zip(self._deadlines, self._states, strict=True)
                     if s is RecordState.ACQUIRED]
        self._next_deadline = min(deadlines) if deadlines else None
        return bool(expired)

    def release_member(self, member_id: str) -> bool:
        """Everything ``member_id`` holds becomes available again (it left); True if any."""
        held = [i for i, (state, owner) in enumerate(zip(self._states, self._owners,
                                                          strict=True))
                if state is RecordState.ACQUIRED and owner == member_id]
        for index in held:
            self._transition(index, Event.LOCK_EXPIRED)
        self._advance_start()
        return bool(held)

    def move_start(self, offset: int) -> None:
        """The SPSO moves to ``offset`` (the log's start passed it; an operator reset the
        group's offsets): what is below is done with, what is past the SPEO forgotten."""
        if offset <= self.start_offset:
            return
        drop = min(offset - self.start_offset, len(self._states))
        for column in (self._states, self._counts, self._owners, self._deadlines):
            del column[:drop]
        self.start_offset = offset

    def reset(self, offset: int) -> None:
        """Start over at ``offset`` with nothing in flight (AlterShareGroupOffsets); the
        state epoch moves, fencing writes made for the old start."""
        for column in (self._states, self._counts, self._owners, self._deadlines):
            column.clear()
        self.start_offset = offset
        self.state_epoch += 1

    # ------------------------------------------------------------------ internals

    def _transition(self, index: int, event: Event) -> None:
        current = self._states[index]
        target = TRANSITIONS.get((current, event))
        if target is None:
            raise AssertionError(f"no transition from {current.name} on {event.name}")
        if current is RecordState.ACQUIRED:
            target = released_state(target, self._counts[index],
                                    self.limits.delivery_count_limit)
            self._owners[index] = None
            self._deadlines[index] = NO_DEADLINE
        self._states[index] = target

    def _fits(self, offset: int) -> bool:
        """May ``offset`` be in flight, within ``max_record_locks`` of the SPSO?"""
        return offset - self.start_offset < self.limits.max_record_locks

    def _archive_through(self, offset: int) -> bool:
        """Offsets after the SPEO up to ``offset`` hold no record: in flight, archived."""
        if not self._fits(offset):
            return False
        while self.end_offset < offset:
            self._append(RecordState.ARCHIVED)
        return True

    def _admit(self, offset: int) -> bool:
        """The record after the SPEO comes into flight, available."""
        if not self._fits(offset):
            return False
        self._append(RecordState.AVAILABLE)
        return True

    def _append(self, state: RecordState) -> None:
        self._states.append(state)
        self._counts.append(0)
        self._owners.append(None)
        self._deadlines.append(NO_DEADLINE)

    def _advance_start(self) -> None:
        done = 0
        for state in self._states:
            if state not in FINISHED:
                break
            done += 1
        if done:
            self.move_start(self.start_offset + done)

    def _ranges(self, offsets: list[int]) -> list[AcquiredRange]:
        ranges: list[AcquiredRange] = []
        for offset in offsets:
            count = self.delivery_count(offset)
            last = ranges[-1] if ranges else None
            if last is not None and last.last_offset + 1 == offset \
                    and last.delivery_count == count:
                ranges[-1] = AcquiredRange(last.first_offset, offset, count)
            else:
                ranges.append(AcquiredRange(offset, offset, count))
        return ranges
