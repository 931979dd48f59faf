"""The share coordinator: the durable state of every share partition, on
``__share_group_state`` (Kafka's ShareCoordinatorShard), sans-IO on the coordinator runtime.

A share partition's key ("group:topic id:partition") places it on a partition of the
topic; the broker leading that partition answers for it. The leader of the topic partition
(the share partition's leader) reads the state when it starts serving the share partition
and writes it after every change it must not lose (acknowledgements, expired locks).

- **Read** returns the state (SPSO, state epoch, in-flight batches); a read with a newer
  leader epoch records that epoch, so a write from an older leader is refused
  (FENCED_LEADER_EPOCH): a leader that lost its partition cannot overwrite its successor.
- **Write** folds the written batches into the state; a state epoch older than the kept
  one is FENCED_STATE_EPOCH (an operator reset the offsets meanwhile).
- **Initialize** sets a new start offset and state epoch (the group coordinator does it
  when it first assigns the partition, and AlterShareGroupOffsets); at the epoch the state
  has already, it changes nothing.
- **Delete** forgets the state (the group was deleted).

Every change is one record: ShareUpdate with the whole state after the change, and every
``updates_per_snapshot`` changes (and at initialization) a ShareSnapshot. Log compaction
keeps the newest of each key, and the newest of the two is the whole state, so replaying a
compacted partition gives the state back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.errors import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    InvalidRequestError,
)
from kafkalite.records import Record
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.share.records import (
    StateKey,
    decode_share_state_key,
    decode_share_state_value,
    share_state_key,
    share_state_value,
)
from kafkalite_server.share.state import PartitionState, StateBatch, merge_batches
from kafkalite_server.topic_ids import uuid_text

KeyValue = tuple[bytes, bytes | None]
NO_LEADER_EPOCH = -1
"""A read that is not a leader's (an operator describing offsets): it fences no one."""
Append = Callable[[int, list[KeyValue]], None]
"""Appends records to a partition of the state topic (raises the append's error)."""


@dataclass
class _Kept:
    state: PartitionState
    updates: int = 0
    """ShareUpdate records written since the last ShareSnapshot."""


class ShareCoordinator:
    def __init__(self, ownership: Ownership, append: Append, updates_per_snapshot: int,
                 topic_exists: Callable[[uuid.UUID], bool]) -> None:
        self.ownership = ownership
        self._append = append
        self._updates_per_snapshot = updates_per_snapshot
        self._topic_exists = topic_exists
        self._states: dict[int, dict[StateKey, _Kept]] = {}
        """State-topic partition -> the share partitions it holds."""

    def partition_for(self, key: StateKey) -> int:
        return self.ownership.partition_for(coordinator_key(key))

    def error_for(self, key: StateKey) -> int:
        """0 when this broker is the key's share coordinator, else the error to answer."""
        return self.ownership.error_for(coordinator_key(key))

    # ------------------------------------------------------------------ the API

    def read(self, key: StateKey, leader_epoch: int) -> tuple[int, PartitionState]:
        """The state (start offset -1: never initialized)."""
        error = self.error_for(key)
        if error:
            return error, PartitionState()
        kept = self._kept(key)
        if kept is None:
            return 0, PartitionState(leader_epoch=leader_epoch)
        if leader_epoch == NO_LEADER_EPOCH:
            return 0, kept.state
        if leader_epoch < kept.state.leader_epoch:
            return FencedLeaderEpochError.errno, kept.state
        if leader_epoch > kept.state.leader_epoch:
            self._store(key, replace(kept.state, leader_epoch=leader_epoch), snapshot=False)
        return 0, self._states[self.partition_for(key)][key].state

    def write(self, key: StateKey, state_epoch: int, leader_epoch: int, start_offset: int,
              batches: Sequence[StateBatch]) -> int:
        error = self.error_for(key) or _malformed(start_offset, batches)
        if error:
            return error
        kept = self._kept(key)
        old = kept.state if kept is not None else PartitionState()
        if state_epoch < old.state_epoch:
            return FencedStateEpochError.errno
        if leader_epoch != NO_LEADER_EPOCH and leader_epoch < old.leader_epoch:
            return FencedLeaderEpochError.errno
        start = max(start_offset, old.start_offset)
        merged = merge_batches(start, old.batches, tuple(batches))
        self._store(key, PartitionState(max(state_epoch, old.state_epoch), start,
                                        max(leader_epoch, old.leader_epoch), merged),
                    snapshot=kept is None)
        return 0

    def initialize(self, key: StateKey, state_epoch: int, start_offset: int) -> int:
        error = self.error_for(key) or (InvalidRequestError.errno if start_offset < 0 else 0)
        if error:
            return error
        kept = self._kept(key)
        if kept is not None and state_epoch < kept.state.state_epoch:
            return FencedStateEpochError.errno
        if kept is not None and kept.state.initialized \
                and state_epoch == kept.state.state_epoch:
            return 0  # initialized at this epoch already: what it holds stays
        leader_epoch = kept.state.leader_epoch if kept is not None else -1
        self._store(key, PartitionState(state_epoch, start_offset, leader_epoch), snapshot=True)
        return 0

    def delete(self, key: StateKey) -> int:
        error = self.error_for(key)
        if error:
            return error
        partition = self.partition_for(key)
        if self._states.get(partition, {}).pop(key, None) is not None:
            self._append(partition, [(share_state_key(key, snapshot=True), None),
                                     (share_state_key(key, snapshot=False), None)])
        return 0

    def state(self, key: StateKey) -> PartitionState | None:
        kept = self._kept(key)
        return kept.state if kept is not None else None

    def keys(self, group_id: str) -> list[StateKey]:
        """The share partitions of ``group_id`` this broker keeps state for."""
        return [key for held in self._states.values() for key in held
                if key.group_id == group_id]

    # ------------------------------------------------------------------ the runtime's side

    def loader(self, partition: int) -> StateLoader:
        return StateLoader(self, partition)

    def install(self, partition: int, states: dict[StateKey, PartitionState]) -> None:
        self._states[partition] = {key: _Kept(state) for key, state in states.items()}

    def unload(self, partition: int) -> None:
        self._states.pop(partition, None)

    def topics_deleted(self, deleted: Callable[[str], bool], partition: int | None) -> None:
        """The state of share partitions whose topic is gone is deleted (a topic created
        again under the name has another id: see :mod:`kafkalite_server.topic_ids`)."""
        partitions = [partition] if partition is not None else list(self._states)
        for index in partitions:
            for key in [k for k in self._states.get(index, {})
                        if not self._topic_exists(k.topic_id)]:
                self.delete(key)

    # ------------------------------------------------------------------ internals

    def _kept(self, key: StateKey) -> _Kept | None:
        return self._states.get(self.partition_for(key), {}).get(key)

    def _store(self, key: StateKey, state: PartitionState, *, snapshot: bool) -> None:
        partition = self.partition_for(key)
        held = self._states.setdefault(partition, {})
        kept = held.get(key)
        snapshot = snapshot or kept is None or kept.updates + 1 >= self._updates_per_snapshot
        self._append(partition, [state_record(key, state, snapshot)])
        held[key] = _Kept(state, 0 if snapshot else (kept.updates + 1 if kept else 0))


def coordinator_key(key: StateKey) -> str:
    """Kafka's SharePartitionKey: ``group:topicId:partition``, the topic id as Kafka prints
    one (URL-safe base64 without padding)."""
    return f"{key.group_id}:{uuid_text(key.topic_id)}:{key.partition}"


def _malformed(start_offset: int, batches: Sequence[StateBatch]) -> int:
    previous = -1
    for batch in sorted(batches, key=lambda b: b.first_offset):
        if batch.first_offset > batch.last_offset or batch.first_offset <= previous \
                or batch.delivery_state not in (0, 2, 4) or batch.delivery_count < 0:
            return InvalidRequestError.errno
        previous = batch.last_offset
    return InvalidRequestError.errno if start_offset < -1 else 0


def state_record(key: StateKey, state: PartitionState, snapshot: bool) -> KeyValue:
    batches = [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
               for b in state.batches]
    body = {"snapshot_epoch": 0, "leader_epoch": state.leader_epoch,
            "start_offset": state.start_offset, "state_batches": batches}
    if snapshot:
        body["state_epoch"] = state.state_epoch
    return share_state_key(key, snapshot), share_state_value(snapshot, body)


class StateLoader:
    """Replays one state-topic partition: a snapshot replaces a key's state, an update
    folds into it, a tombstone deletes it."""

    def __init__(self, coordinator: ShareCoordinator, partition: int) -> None:
        self._coordinator = coordinator
        self._partition = partition
        self._states: dict[StateKey, PartitionState] = {}
        self.skipped = 0

    def load(self, records: Sequence[Record]) -> None:
        for record in records:
            if record.batch.is_control or record.key is None:
                continue
            try:
                self._apply(record.key, record.value)
            except (ProtocolDecodeError, KeyError, ValueError):
                self.skipped += 1

    def _apply(self, key_bytes: bytes, value: bytes | None) -> None:
        snapshot, key = decode_share_state_key(key_bytes)
        if value is None:
            self._states.pop(key, None)
            return
        body = decode_share_state_value(snapshot, value)
        batches = tuple(StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"],
                                   b["delivery_count"]) for b in body["state_batches"])
        old = self._states.get(key, PartitionState())
        if snapshot:
            self._states[key] = PartitionState(body["state_epoch"], body["start_offset"],
                                               body["leader_epoch"], batches)
        else:
            start = max(body["start_offset"], old.start_offset)
            self._states[key] = PartitionState(old.state_epoch, start,
                                               max(body["leader_epoch"], old.leader_epoch),
                                               merge_batches(start, old.batches, batches))

    def complete(self) -> None:
        self._coordinator.install(self._partition, self._states)
