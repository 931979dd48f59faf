"""Share groups' membership (KIP-932), the group coordinator's side, sans-IO on a clock.

A share group lives where a classic group would (its ``__consumer_offsets`` partition) and
shares the group id space with classic groups. Members join and stay with
ShareGroupHeartbeat:

- epoch 0 joins (the member id is the client's, or one the coordinator draws); -1 leaves;
  any other epoch must be between the one the member last heartbeated with (kept as its
  previous epoch) and its current one: the group may have moved on several times since
  (members joined between two of its heartbeats) and an answer may have been lost; else
  FENCED_MEMBER_EPOCH; an unknown member is UNKNOWN_MEMBER_ID;
- a join, a leave, a subscription change and newly initialized partitions bump the group
  epoch; the assignment is then recomputed and every member moves to the group epoch
  (share groups do not revoke: a partition may be read by many members at once, so a
  member takes its new assignment at once);
- the assignment is Kafka's simple assignor (:mod:`.simple_assignor`), over the partitions
  of the topics each member subscribes to whose share state is initialized: with no more
  members than partitions each partition goes to one member, else each member gets one
  partition that it shares with others (several members on one partition share its
  records; that is what a share group is for);
- a member that does not heartbeat within ``group.share.session.timeout.ms`` is removed.

Partitions are initialized (their share state created at the share coordinator, with the
start offset ``share.auto.offset.reset`` gives) by the service before they are assigned:
:meth:`ShareGroups.uninitialized` says which are missing, :meth:`ShareGroups.initialized`
records them.

Every change is appended as Kafka's ShareGroup* records (:mod:`.records`); replaying them
(:class:`ShareGroupLoader`) gives the groups back after a coordinator failover.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalite.protocol.errors import (
    FencedMemberEpochError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    UnknownMemberIdError,
)
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.group.group_timeouts import GroupTimeouts
from kafkalite_server.group.modern_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    HeartbeatResult,
    ModernGroup,
    ModernGroupLoader,
    ModernGroups,
    ModernMember,
)
from kafkalite_server.group.modern_records import (
    GroupRecordType,
    KeyValue,
    group_record,
    wire_assignment,
)
from kafkalite_server.share.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_CONFIG,
    GROUP_METADATA,
    SHARE_RECORDS,
    STATE_PARTITION_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
)
from kafkalite_server.share.simple_assignor import Assignment, assign

STABLE_STATE = 0
"""ShareGroupCurrentMemberAssignment's member state: share members are always stable."""


@dataclass
class ShareMember(ModernMember):
    member_epoch: int = 0
    assignment: Assignment = field(default_factory=dict)


@dataclass
class ShareGroup(ModernGroup[ShareMember]):
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    """topic id -> (topic name, partitions whose share state exists)"""


@dataclass(frozen=True)
class Topics:
    """What the coordinator needs to know of the cluster's topics."""

    partition_count: Callable[[str], int | None]
    topic_id: Callable[[str], uuid.UUID]


class ShareGroups(ModernGroups[ShareGroup]):
    records = SHARE_RECORDS

    def __init__(self, ownership: Ownership, append: Callable[[int, list[KeyValue]], None],
                 topics: Topics, clock: Callable[[], int], *, timeouts: GroupTimeouts,
                 max_size: int, other_group_type: Callable[[str], str | None]) -> None:
        super().__init__(ownership, append, clock)
        self._topics = topics
        self.timeouts = timeouts
        self._max_size = max_size
        self._other_group_type = other_group_type
        """The type of a classic or consumer group with this id, which a share group must
        not take over; None when there is none."""
        self._configs: dict[int, dict[str, dict[str, str]]] = {}
        """``__consumer_offsets`` partition -> group id -> the group configs set for it
        (a group may have configs before it has members)."""

    def new_group(self, group_id: str) -> ShareGroup:
        return ShareGroup(group_id)

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                  rack_id: str | None, subscribed: Sequence[str] | None, *,
                  client_id: str, client_host: str) -> HeartbeatResult:
        error = self.ownership.error_for(group_id) or _invalid(group_id, member_id,
                                                              member_epoch, subscribed)
        if error:
            return HeartbeatResult(error)
        group = self._group_for(group_id, member_epoch, self._other_group_type)
        if isinstance(group, HeartbeatResult):
            return group
        if member_epoch == LEAVE_EPOCH:
            return self._leave(group, member_id)
        if member_epoch == JOIN_EPOCH:
            return self._join(group, member_id or str(uuid.uuid4()), rack_id, subscribed or (),
                              client_id, client_host)
        member = group.members.get(member_id)
        if member is None:
            return HeartbeatResult(UnknownMemberIdError.errno)
        if not member.previous_member_epoch <= member_epoch <= member.member_epoch:
            return HeartbeatResult(FencedMemberEpochError.errno,
                                   message=f"epoch {member_epoch}, the member is at "
                                           f"{member.member_epoch}")
        member.session_deadline_ms = self._clock() + self.session_timeout_ms(group_id)
        records: list[KeyValue] = []
        if member_epoch != member.previous_member_epoch:  # what it holds now
            member.previous_member_epoch = member_epoch
            records.append(_current_assignment(group, member))
        if subscribed is not None and tuple(sorted(set(subscribed))) != member.subscribed_topics:
            member.subscribed_topics = tuple(sorted(set(subscribed)))
            records.append(self._member_metadata(group, member, {}))
            records += self._bump(group)
        self._write(group, records)
        return self.answer(group_id, member_id, member_epoch)

    def answer(self, group_id: str, member_id: str, known_epoch: int) -> HeartbeatResult:
        """A member's epoch, and its assignment unless it has it (it knows this epoch)."""
        group = self.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is None:
            return HeartbeatResult(UnknownMemberIdError.errno)
        changed = known_epoch != member.member_epoch
        return HeartbeatResult(0, member.member_id, member.member_epoch,
                               dict(member.assignment) if changed else None)

    def _join(self, group: ShareGroup, member_id: str, rack_id: str | None,
              subscribed: Sequence[str], client_id: str, client_host: str) -> HeartbeatResult:
        if member_id not in group.members and len(group.members) >= self._max_size:
            return HeartbeatResult(GroupMaxSizeReachedError.errno,
                                   message=f"group.share.max.size is {self._max_size}")
        member = ShareMember(member_id, client_id=client_id, client_host=client_host,
                             rack_id=rack_id, subscribed_topics=tuple(sorted(set(subscribed))))
        member.session_deadline_ms = self._clock() + self.session_timeout_ms(group.group_id)
        group.members[member_id] = member
        self._write(group, [self._member_metadata(group, member, {}), *self._bump(group)])
        return HeartbeatResult(0, member_id, member.member_epoch, dict(member.assignment))

    def _bump(self, group: ShareGroup) -> list[KeyValue]:
        """A new group epoch, the assignment it implies, every member moved to it."""
        records = super()._bump(group)
        group.assignment_epoch = group.group_epoch
        key = {"group_id": group.group_id}
        assignments = assign({m.member_id: self._assignable(group, m)
                              for m in group.members.values()},
                             {m.member_id: m.assignment for m in group.members.values()})
        for member in group.members.values():
            member.assignment = assignments[member.member_id]
            if member.member_epoch == JOIN_EPOCH:  # it will hold what its join answer says
                member.previous_member_epoch = group.group_epoch
            member.member_epoch = group.group_epoch
            records.append(group_record(
                TARGET_ASSIGNMENT_MEMBER, {**key, "member_id": member.member_id},
                {"topic_partitions": wire_assignment(member.assignment)}))
            records.append(_current_assignment(group, member))
        records.append(group_record(TARGET_ASSIGNMENT_METADATA, key,
                                    {"assignment_epoch": group.assignment_epoch}))
        return records

    def _assignable(self, group: ShareGroup, member: ShareMember) -> Assignment:
        """The partitions ``member`` may be assigned: of the topics it subscribes to, those
        that exist and whose share state is initialized."""
        assignable: Assignment = {}
        for topic in member.subscribed_topics:
            topic_id = self._topics.topic_id(topic)
            ready = group.initialized.get(topic_id)
            count = self._topics.partition_count(topic)
            if ready is None or count is None:
                continue
            partitions = tuple(p for p in sorted(ready[1]) if p < count)
            if partitions:
                assignable[topic_id] = partitions
        return assignable

    # ------------------------------------------------------------------ initialization

    def uninitialized(self, group_id: str) -> list[tuple[str, int]]:
        """Partitions of topics the group's members subscribe to that have no share state
        yet: the service initializes them before they are assigned."""
        group = self.group(group_id)
        if group is None:
            return []
        missing = []
        for topic in sorted({t for m in group.members.values() for t in m.subscribed_topics}):
            count = self._topics.partition_count(topic)
            if count is None:
                continue
            ready = group.initialized.get(self._topics.topic_id(topic), ("", frozenset()))[1]
            missing += [(topic, p) for p in range(count) if p not in ready]
        return missing

    def initialized(self, group_id: str, partitions: Sequence[tuple[str, int]]) -> None:
        """Share state now exists for ``partitions``: they are assigned from a new epoch."""
        group = self.group(group_id)
        if group is None or not partitions or self.ownership.error_for(group_id):
            return
        for topic, partition in partitions:
            topic_id = self._topics.topic_id(topic)
            _name, ready = group.initialized.get(topic_id, (topic, frozenset()))
            group.initialized[topic_id] = (topic, ready | {partition})
        self._write(group, [_state_partitions(group), *self._bump(group)])

    def forget_topics(self, group_id: str, topic_ids: Sequence[uuid.UUID]) -> None:
        """The share state of these topics was deleted (the topics are gone)."""
        group = self.group(group_id)
        if group is None or not any(t in group.initialized for t in topic_ids):
            return
        for topic_id in topic_ids:
            group.initialized.pop(topic_id, None)
        self._write(group, [_state_partitions(group), *self._bump(group)])

    # ------------------------------------------------------------------ timers, admin

    def delete(self, group_id: str) -> None:
        """Forgets an empty group and its configs (its share state is deleted by the
        caller)."""
        group = self.group(group_id)
        if group is None:
            return
        key = {"group_id": group_id}
        partition = self.ownership.partition_for(group_id)
        self._write(group, [group_record(kind, key, None) for kind in (
            STATE_PARTITION_METADATA, TARGET_ASSIGNMENT_METADATA, GROUP_METADATA,
            GROUP_CONFIG)])
        self._configs.get(partition, {}).pop(group_id, None)
        del self._groups[partition][group_id]

    # ------------------------------------------------------------------ group configs

    def configs(self, group_id: str) -> dict[str, str]:
        """The configs set for ``group_id`` (not the defaults)."""
        return dict(self._configs.get(self.ownership.partition_for(group_id), {})
                    .get(group_id, {}))

    def set_configs(self, group_id: str, configs: dict[str, str]) -> int:
        """Replaces the configs set for ``group_id`` (validated by the caller)."""
        error = self.ownership.error_for(group_id)
        if error:
            return error
        partition = self.ownership.partition_for(group_id)
        held = self._configs.setdefault(partition, {})
        if configs:
            held[group_id] = dict(configs)
        else:
            held.pop(group_id, None)
        self._append(partition, [group_record(
            GROUP_CONFIG, {"group_id": group_id},
            {"configs": [{"name": k, "value": v} for k, v in sorted(configs.items())]}
            if configs else None)])
        return 0

    # ------------------------------------------------------------------ the runtime's side

    def loader(self, partition: int) -> ShareGroupLoader:
        return ShareGroupLoader(self, partition)

    def install_configs(self, partition: int, configs: dict[str, dict[str, str]]) -> None:
        """A loaded partition's group configs."""
        self._configs[partition] = configs

    def unload(self, partition: int) -> None:
        super().unload(partition)
        self._configs.pop(partition, None)

    def topics_deleted(self, deleted: Callable[[str], bool], partition: int | None) -> None:
        """Deleted topics are no longer initialized for any group (the share coordinator
        deletes their state): a topic created again under the name starts afresh."""
        partitions = [partition] if partition is not None else list(self._groups)
        for index in partitions:
            for group in list(self._groups.get(index, {}).values()):
                gone = [t for t, (name, _p) in group.initialized.items() if deleted(name)]
                if gone:
                    self.forget_topics(group.group_id, gone)



def _invalid(group_id: str, member_id: str, epoch: int, subscribed: Sequence[str] | None) -> int:
    if not group_id or epoch < LEAVE_EPOCH or (epoch != JOIN_EPOCH and not member_id):
        return InvalidRequestError.errno
    if epoch == JOIN_EPOCH and not subscribed:
        return InvalidRequestError.errno  # a member joins subscribed to something
    return 0


def _current_assignment(group: ShareGroup, member: ShareMember) -> KeyValue:
    return group_record(CURRENT_MEMBER_ASSIGNMENT, {"group_id": group.group_id,
                                                    "member_id": member.member_id}, {
        "member_epoch": member.member_epoch,
        "previous_member_epoch": member.previous_member_epoch,
        "state": STABLE_STATE, "assigned_partitions": wire_assignment(member.assignment)})


def _state_partitions(group: ShareGroup) -> KeyValue:
    return group_record(STATE_PARTITION_METADATA, {"group_id": group.group_id}, {
        "initialized_topics": [{"topic_id": topic_id, "topic_name": name,
                                "partitions": sorted(ready)}
                               for topic_id, (name, ready) in sorted(group.initialized.items())],
        "deleting_topics": []})


class ShareGroupLoader(ModernGroupLoader[ShareGroup]):
    """Replays one ``__consumer_offsets`` partition's share-group records and group
    configs."""

    def __init__(self, groups: ShareGroups, partition: int) -> None:
        super().__init__(groups, partition)
        self._share_groups = groups
        self._configs: dict[str, dict[str, str]] = {}

    def _apply(self, kind: GroupRecordType, key: dict[str, Any],
               value: dict[str, Any] | None) -> None:
        if kind is not GROUP_CONFIG:
            super()._apply(kind, key, value)
        elif value is None:
            self._configs.pop(key["group_id"], None)
        else:
            self._configs[key["group_id"]] = {c["name"]: c["value"] for c in value["configs"]}

    def _member(self, group: ShareGroup, member_id: str) -> ShareMember:
        return group.members.setdefault(member_id, ShareMember(member_id))

    def _apply_other(self, group: ShareGroup, kind: GroupRecordType, member_id: str,
                     value: dict[str, Any] | None) -> None:
        if kind is STATE_PARTITION_METADATA:
            group.initialized = {} if value is None else {
                t["topic_id"]: (t["topic_name"], frozenset(t["partitions"]))
                for t in value["initialized_topics"]}
        elif kind is CURRENT_MEMBER_ASSIGNMENT and value is not None \
                and member_id in group.members:
            member = group.members[member_id]
            member.member_epoch = value["member_epoch"]
            member.previous_member_epoch = value["previous_member_epoch"]
            member.assignment = {t["topic_id"]: tuple(t["partitions"])
                                 for t in value["assigned_partitions"]}

    def complete(self) -> None:
        super().complete()
        self._share_groups.install_configs(self._partition, self._configs)
