"""What a share partition's records can be, and the durable form of a share partition.

A record of a share partition is in one of Kafka's four states (the byte is what the share
state stores); :data:`TRANSITIONS` maps (state, event) to the next state. A pair missing
from the table is a transition that cannot happen: an acknowledgement of a record this
member does not hold answers INVALID_RECORD_STATE.

- ACQUIRE: a ShareFetch hands an available record to a member, under a lock.
- ACCEPT / RELEASE / REJECT: the member's acknowledgement (ShareFetch or ShareAcknowledge).
  GAP acknowledges an offset the member found no record at (a control record, a record
  compaction removed): it is archived like a rejected one.
- LOCK_EXPIRED: the member did not acknowledge in ``group.share.record.lock.duration.ms``
  (a crashed member, a slow one), or it left: the record is available again.
- A record made available again after its ``group.share.delivery.count.limit``-th delivery
  is archived instead (:func:`released_state`): a poison record is not redelivered forever.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from enum import IntEnum


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class Event(IntEnum):
    """Acknowledgement events carry their wire acknowledge type as their value."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    ACQUIRE = 10
    LOCK_EXPIRED = 11


ACKNOWLEDGE_EVENTS = frozenset((Event.GAP, Event.ACCEPT, Event.RELEASE, Event.REJECT))
"""The events a member's acknowledgement may carry (its acknowledge types 0-3)."""

TRANSITIONS: dict[tuple[RecordState, Event], RecordState] = {
    (RecordState.AVAILABLE, Event.ACQUIRE): RecordState.ACQUIRED,
    (RecordState.ACQUIRED, Event.ACCEPT): RecordState.ACKNOWLEDGED,
    (RecordState.ACQUIRED, Event.RELEASE): RecordState.AVAILABLE,
    (RecordState.ACQUIRED, Event.REJECT): RecordState.ARCHIVED,
    (RecordState.ACQUIRED, Event.GAP): RecordState.ARCHIVED,
    (RecordState.ACQUIRED, Event.LOCK_EXPIRED): RecordState.AVAILABLE,
}

FINISHED = frozenset((RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))
"""States a record never leaves: the share-partition start offset moves past them."""


def released_state(target: RecordState, delivery_count: int, limit: int) -> RecordState:
    """A record about to become available again is archived once delivered ``limit`` times."""
    if target is RecordState.AVAILABLE and delivery_count >= limit:
        return RecordState.ARCHIVED
    return target


# ------------------------------------------------------------------ the durable form


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A range of offsets in one state with one delivery count (the share state's unit)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    """0 available, 2 acknowledged, 4 archived (an acquired record is stored available)."""
    delivery_count: int


@dataclass(frozen=True)
class PartitionState:
    """What the share coordinator keeps for one (group, topic, partition): Kafka's
    ShareSnapshot value. ``start_offset`` -1 means not initialized yet."""

    state_epoch: int = 0
    start_offset: int = -1
    leader_epoch: int = -1
    batches: tuple[StateBatch, ...] = field(default=())

    @property
    def initialized(self) -> bool:
        return self.start_offset >= 0


def merge_batches(start_offset: int, old: tuple[StateBatch, ...],
                  new: tuple[StateBatch, ...]) -> tuple[StateBatch, ...]:
    """``old`` overwritten by ``new`` where they overlap, below ``start_offset`` dropped:
    how the share coordinator folds a WriteShareGroupState into what it keeps. Works on
    ranges, never on single offsets: a batch may span any number of offsets."""
    trimmed = (_trimmed(b, start_offset) for b in new)
    fresh = sorted((b for b in trimmed if b is not None), key=lambda b: b.first_offset)
    kept: list[StateBatch] = []
    for batch in old:
        kept.extend(_outside(_trimmed(batch, start_offset), fresh))
    return coalesced(sorted(kept + fresh, key=lambda b: b.first_offset))


def _trimmed(batch: StateBatch | None, start_offset: int) -> StateBatch | None:
    if batch is None or batch.last_offset < start_offset:
        return None
    if batch.first_offset >= start_offset:
        return batch
    return StateBatch(start_offset, batch.last_offset, batch.delivery_state,
                      batch.delivery_count)


def _outside(batch: StateBatch | None, cover: list[StateBatch]) -> list[StateBatch]:
    """The parts of ``batch`` no batch of ``cover`` (sorted, disjoint) overlaps."""
    if batch is None:
        return []
    pieces = []
    first = batch.first_offset
    index = bisect.bisect_right([b.last_offset for b in cover], first - 1)
    for covering in cover[index:]:
        if covering.first_offset > batch.last_offset:
            break
        if covering.first_offset > first:
            pieces.append(StateBatch(first, covering.first_offset - 1, batch.delivery_state,
                                     batch.delivery_count))
        first = max(first, covering.last_offset + 1)
    if first <= batch.last_offset:
        pieces.append(StateBatch(first, batch.last_offset, batch.delivery_state,
                                 batch.delivery_count))
    return pieces


def coalesced(batches: list[StateBatch]) -> tuple[StateBatch, ...]:
    """Sorted, disjoint batches with touching neighbours of equal state and count merged."""
    out: list[StateBatch] = []
    for batch in batches:
        last = out[-1] if out else None
        if last is not None and last.last_offset + 1 == batch.first_offset \
                and last.delivery_state == batch.delivery_state \
                and last.delivery_count == batch.delivery_count:
            out[-1] = StateBatch(last.first_offset, batch.last_offset, batch.delivery_state,
                                 batch.delivery_count)
        else:
            out.append(batch)
    return tuple(out)
