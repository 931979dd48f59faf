"""The base of the modern group protocols' coordinator side (KIP-848 consumer groups and
KIP-932 share groups), sans-IO on a clock.

Both protocols keep their groups the same way, which this module holds once:

- a group lives in its ``__consumer_offsets`` partition, and this coordinator keeps the
  groups of the partitions it owns (:meth:`ModernGroups.install` on load,
  :meth:`ModernGroups.unload` on resignation);
- a member joins with epoch 0 (a group is created for it), leaves with epoch -1; its
  session ends when it does not heartbeat in time (:meth:`ModernGroups.expire_members`);
- a join, a leave and a subscription change bump the **group epoch**; a member leaving
  writes the tombstones of its records, then the new epoch;
- every change is appended as records (:mod:`.modern_records`), and
  :class:`ModernGroupLoader` replays them after a failover (the last value per key wins, a
  tombstone deletes).

What differs (how a target assignment is computed and how a member reaches it) stays in
each protocol's subclass.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.errors import GroupIdNotFoundError, UnknownMemberIdError
from kafkalite.protocol.states import GroupState
from kafkalite.records import Record
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.group.group_timeouts import GroupTimeouts
from kafkalite_server.group.modern_records import (
    GroupRecordType,
    KeyValue,
    ModernRecordTypes,
    decode_group_record,
    group_record,
)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1


@dataclass
class ModernMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topics: tuple[str, ...] = ()
    previous_member_epoch: int = -1
    session_deadline_ms: int = 0

    def expired(self, now_ms: int) -> bool:
        """Whether the coordinator removes the member now."""
        return self.session_deadline_ms <= now_ms


M = TypeVar("M", bound=ModernMember)


@dataclass
class ModernGroup(Generic[M]):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, M] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """The group's state as ListGroups and the describes name it: a protocol whose
        members reconcile knows more states."""
        return GroupState.STABLE if self.members else GroupState.EMPTY


G = TypeVar("G", bound=ModernGroup[Any])


@dataclass(frozen=True)
class HeartbeatResult:
    error: int
    member_id: str | None = None
    member_epoch: int = -1
    assignment: Mapping[uuid.UUID, Collection[int]] | None = None
    """None: the member has it already."""
    message: str | None = None


class ModernGroups(ABC, Generic[G]):
    """The groups of one modern protocol in the partitions this coordinator owns."""

    records: ModernRecordTypes
    timeouts: GroupTimeouts

    def __init__(self, ownership: Ownership, append: Callable[[int, list[KeyValue]], None],
                 clock: Callable[[], int]) -> None:
        self.ownership = ownership
        self._append = append
        self._clock = clock
        self._groups: dict[int, dict[str, G]] = {}
        """``__consumer_offsets`` partition -> its groups of this protocol."""

    @abstractmethod
    def new_group(self, group_id: str) -> G:
        """An empty group of this protocol."""

    def group(self, group_id: str) -> G | None:
        return self._groups.get(self.ownership.partition_for(group_id), {}).get(group_id)

    @abstractmethod
    def configs(self, group_id: str) -> Mapping[str, str]:
        """The group configs set for ``group_id`` (Kafka's GROUP config resource)."""

    def session_timeout_ms(self, group_id: str) -> int:
        """How long a member of the group may go without a heartbeat: the group's own
        value, else the broker's."""
        return self.timeouts.session_timeout_for(self.configs(group_id))

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The heartbeat interval the group's members are told."""
        return self.timeouts.heartbeat_interval_for(self.configs(group_id))

    def groups(self) -> list[G]:
        return [g for partition in sorted(self.ownership.owned)
                for g in self._groups.get(partition, {}).values()]

    def _group_for(self, group_id: str, member_epoch: int,
                   other_group_type: Callable[[str], str | None]) -> G | HeartbeatResult:
        """The heartbeat's group: created for a joining member; refused when the id is a
        group of another type (``other_group_type`` names it, None when there is none) or
        unknown past the join."""
        group = self.group(group_id)
        if group is not None:
            return group
        other = other_group_type(group_id)
        if other is not None:
            return HeartbeatResult(GroupIdNotFoundError.errno,
                                   message=f"group {group_id!r} is a {other} group")
        if member_epoch != JOIN_EPOCH:
            return HeartbeatResult(UnknownMemberIdError.errno)
        group = self.new_group(group_id)
        self._groups.setdefault(self.ownership.partition_for(group_id), {})[group_id] = group
        return group

    def _leave(self, group: G, member_id: str) -> HeartbeatResult:
        if member_id not in group.members:
            return HeartbeatResult(UnknownMemberIdError.errno)
        self._write(group, self._remove(group, member_id))
        return HeartbeatResult(0, member_id, LEAVE_EPOCH)

    def _remove(self, group: G, member_id: str) -> list[KeyValue]:
        """The member leaves: its records' tombstones, then a new group epoch."""
        del group.members[member_id]
        key = {"group_id": group.group_id, "member_id": member_id}
        return [group_record(kind, key, None) for kind in self.records.member_kinds] + \
            self._bump(group)

    def _bump(self, group: G) -> list[KeyValue]:
        group.group_epoch += 1
        return [group_record(self.records.group_metadata, {"group_id": group.group_id},
                             {"epoch": group.group_epoch})]

    def expire_members(self) -> None:
        """Members whose session timed out (or who are otherwise overdue) leave."""
        now = self._clock()
        for group in self.groups():
            records: list[KeyValue] = []
            for member_id in [m for m, member in group.members.items() if member.expired(now)]:
                records += self._remove(group, member_id)
            self._write(group, records)

    def _member_metadata(self, group: G, member: M, value: Mapping[str, Any]) -> KeyValue:
        """The member's metadata record: the shared fields, and the protocol's ``value``."""
        return group_record(self.records.member_metadata, {
            "group_id": group.group_id, "member_id": member.member_id}, {
            "rack_id": member.rack_id, "client_id": member.client_id,
            "client_host": member.client_host,
            "subscribed_topic_names": list(member.subscribed_topics), **value})

    # ------------------------------------------------------------------ the runtime's side

    def install(self, partition: int, groups: dict[str, G]) -> None:
        """A loaded partition's groups; every member gets a fresh session (the clock of the
        previous coordinator is not this one's)."""
        now = self._clock()
        for group in groups.values():
            deadline = now + self.session_timeout_ms(group.group_id)
            for member in group.members.values():
                member.session_deadline_ms = deadline
        self._groups[partition] = groups

    def unload(self, partition: int) -> None:
        self._groups.pop(partition, None)

    def _write(self, group: G, records: list[KeyValue]) -> None:
        if records:
            self._append(self.ownership.partition_for(group.group_id), records)


class ModernGroupLoader(ABC, Generic[G]):
    """Replays one ``__consumer_offsets`` partition's records of one protocol (the last
    value per key wins, a tombstone deletes), skipping every other record type."""

    def __init__(self, groups: ModernGroups[G], partition: int) -> None:
        self._owner = groups
        self._kinds = groups.records
        self._by_key_version = groups.records.by_key_version
        self._partition = partition
        self._groups: dict[str, G] = {}
        self.skipped = 0

    def load(self, records: Sequence[Record]) -> None:
        for record in records:
            if record.batch.is_control or record.key is None:
                continue
            try:
                decoded = decode_group_record(self._by_key_version, record.key, record.value)
            except (ProtocolDecodeError, KeyError, ValueError):
                self.skipped += 1
                continue
            if decoded is not None:
                self._apply(*decoded)

    def _apply(self, kind: GroupRecordType, key: dict[str, Any],
               value: dict[str, Any] | None) -> None:
        group_id = key["group_id"]
        group = self._groups.get(group_id)
        if group is None:
            if value is None:
                return
            group = self._groups[group_id] = self._owner.new_group(group_id)
        member_id: str = key.get("member_id", "")
        if kind is self._kinds.group_metadata:
            if value is None:
                del self._groups[group_id]
            else:
                group.group_epoch = value["epoch"]
        elif kind is self._kinds.target_assignment_metadata:
            group.assignment_epoch = value["assignment_epoch"] if value else 0
        elif kind is self._kinds.member_metadata:
            if value is None:
                group.members.pop(member_id, None)
                return
            member = self._member(group, member_id)
            member.rack_id = value["rack_id"]
            member.client_id = value["client_id"]
            member.client_host = value["client_host"]
            member.subscribed_topics = tuple(value["subscribed_topic_names"])
            self._apply_member_metadata(member, value)
        else:
            self._apply_other(group, kind, member_id, value)

    @abstractmethod
    def _member(self, group: G, member_id: str) -> Any:
        """The member of the record, created by its first record."""

    def _apply_member_metadata(self, member: Any, value: dict[str, Any]) -> None:
        """The protocol's own fields of a member's metadata."""

    @abstractmethod
    def _apply_other(self, group: G, kind: GroupRecordType, member_id: str,
                     value: dict[str, Any] | None) -> None:
        """The protocol's own records, and its assignment records."""

    def complete(self) -> None:
        self._owner.install(self._partition, self._groups)

