"""Consumer groups of the KIP-848 protocol, the group coordinator's side, sans-IO on a clock.

A consumer group lives where a classic group would (its ``__consumer_offsets`` partition)
and shares the group id space with classic and share groups. Members join, stay and leave
with ConsumerGroupHeartbeat; the coordinator, not a member, computes the assignment:

- epoch 0 joins (the member id is the client's, or one the coordinator draws), -1 leaves;
  any other epoch must be the member's current one, or its previous one when the member
  owns nothing beyond its assignment (its last answer was lost), else FENCED_MEMBER_EPOCH;
  an unknown member is UNKNOWN_MEMBER_ID;
- a join, a leave, a subscription or assignor change, and a subscribed topic appearing,
  vanishing or gaining partitions bump the **group epoch** (a member subscribes by name,
  by regex (:mod:`.topic_regex`), or both; regexes are resolved apart from the heartbeats,
  as Kafka 4 does (:meth:`ConsumerGroups.refresh_regexes`), and a new topic a regex
  matches is one appearing); the next heartbeat then
  computes the target assignment with the group's assignor (:mod:`.consumer_assignors`)
  and sets the **assignment epoch** to the group epoch;
- each member then reconciles towards its target (:mod:`.consumer_reconciliation`): it
  revokes first, keeps its old epoch until it has, and only then gets the partitions it
  gains, each once its previous owner released it; its **member epoch** is the target
  epoch once it revoked what it had to;
- a member that does not heartbeat within ``group.consumer.session.timeout.ms``, or does
  not revoke within its rebalance timeout, is removed (its partitions are freed);
- offsets are committed with the member epoch (:meth:`ConsumerGroups.validate_commit`) and
  kept with every other group's offsets by the classic coordinator.

Every change is appended as Kafka's ConsumerGroup* records (:mod:`.consumer_records`);
replaying them (:class:`ConsumerGroupLoader`) gives the groups back after a failover.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.consumer_protocol import ConsumerProtocolAssignment
from kafkalite.protocol.errors import (
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    MemberIdRequiredError,
    NonEmptyGroupError,
    RebalanceInProgressError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)
from kafkalite.protocol.primitives import INT32_MAX
from kafkalite.protocol.states import GroupState
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.group.consumer_assignors import ASSIGNORS, Assignment, SubscribedTopic
from kafkalite_server.group.consumer_migration import (
    DEFAULT_MIGRATION_POLICY,
    ClassicGroupsPort,
    ClassicGroupState,
    ClassicMemberState,
    ClassicMetadata,
    MigrationPolicy,
    owned_partitions,
)
from kafkalite_server.group.consumer_reconciliation import MemberState, Reconciled, reconcile
from kafkalite_server.group.consumer_records import (
    CONSUMER_RECORDS,
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    PARTITION_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
)
from kafkalite_server.group.coordinator import JoinRequest
from kafkalite_server.group.group import CONSUMER_PROTOCOL_TYPE
from kafkalite_server.group.group_timeouts import CONSUMER_GROUP_TIMEOUTS, GroupTimeouts
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
from kafkalite_server.group.results import JoinResult, SyncResult
from kafkalite_server.group.topic_regex import (
    TopicRegexError,
    compile_topic_regex,
    matching_topics,
)

STATIC_LEAVE_EPOCH = -2
CONSUMER_GROUP_TYPE = "consumer"
"""ListGroups' group_type (and protocol type) of a consumer group."""


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """The ``group.consumer.*`` broker keys."""

    timeouts: GroupTimeouts = field(default_factory=lambda: GroupTimeouts(CONSUMER_GROUP_TIMEOUTS))
    max_size: int = INT32_MAX
    assignors: tuple[str, ...] = ("uniform", "range")
    migration_policy: MigrationPolicy = DEFAULT_MIGRATION_POLICY


@dataclass(frozen=True)
class Topics:
    """What the coordinator needs to know of the cluster's topics."""

    partition_count: Callable[[str], int | None]
    topic_id: Callable[[str], uuid.UUID]
    names: Callable[[], frozenset[str]] = frozenset
    """Every topic a regex subscription may match (the internal ones left out)."""
    partition_racks: Callable[[str], tuple[frozenset[str], ...]] = lambda _name: ()
    """Per partition of a topic, the racks of its replicas' brokers (empty: none known)."""


@dataclass(frozen=True)
class Heartbeat:
    """A ConsumerGroupHeartbeat's fields; None means "unchanged since the last one"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: Sequence[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class ConsumerMember(ModernMember):
    instance_id: str | None = None
    subscribed_regex: str | None = None
    rebalance_timeout_ms: int = 300_000
    server_assignor: str | None = None
    current: Reconciled = field(default_factory=lambda: Reconciled(MemberState.STABLE, 0))
    revocation_deadline_ms: int | None = None
    static_left: bool = False
    """A static member that left with epoch -2: its place is kept for its instance id."""
    classic: ClassicMetadata | None = None
    """Set for a member that speaks the classic protocol (JoinGroup, SyncGroup, Heartbeat)
    in a group converted from a classic one (:mod:`.consumer_migration`)."""

    @property
    def member_epoch(self) -> int:
        return self.current.member_epoch

    def expired(self, now_ms: int) -> bool:
        """Its session timed out, or it did not revoke within its rebalance timeout."""
        return super().expired(now_ms) or (self.revocation_deadline_ms is not None
                                           and self.revocation_deadline_ms <= now_ms)

    def owns(self, topic_id: uuid.UUID, partition: int) -> bool:
        return any(partition in held.get(topic_id, frozenset())
                   for held in (self.current.assigned, self.current.pending_revocation))


@dataclass
class ConsumerGroup(ModernGroup[ConsumerMember]):
    target: dict[str, Assignment] = field(default_factory=dict)
    subscribed: dict[str, SubscribedTopic] = field(default_factory=dict)
    """The subscribed topics as of the group epoch (ConsumerGroupPartitionMetadata)."""
    assignor: str = ""
    resolved_regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    """Each regex the members subscribe with -> the topics it matched when last resolved
    (:meth:`ConsumerGroups.refresh_regexes`); a regex not resolved yet matches nothing."""
    regex_topics: frozenset[str] = frozenset()
    """The cluster's topics the regexes were last resolved against."""

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState as ListGroups and the describes name it."""
        if not self.members:
            return GroupState.EMPTY
        if self.assignment_epoch != self.group_epoch:
            return GroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch
               or m.current.state is not MemberState.STABLE for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE


class ConsumerGroups(ModernGroups[ConsumerGroup]):
    records = CONSUMER_RECORDS

    def __init__(self, ownership: Ownership, append: Callable[[int, list[KeyValue]], None],
                 topics: Topics, clock: Callable[[], int], config: ConsumerGroupConfig, *,
                 other_group_type: Callable[[str], str | None],
                 classic: ClassicGroupsPort | None = None,
                 group_configs: Callable[[str], Mapping[str, str]] = lambda _group_id: {},
                 ) -> None:
        super().__init__(ownership, append, clock)
        self._topics = topics
        self.config = config
        self.timeouts = config.timeouts
        self._group_configs = group_configs
        """The GROUP configs set for a group id (kept beside the share groups' state)."""
        self._other_group_type = other_group_type
        """The type of a group of another kind with this id that has members (or is a share
        group), which a consumer group must not take over; None when there is none."""
        self._classic = classic
        """The classic coordinator, which groups are upgraded from and downgraded to (None:
        no migration)."""

    def new_group(self, group_id: str) -> ConsumerGroup:
        return ConsumerGroup(group_id)

    def configs(self, group_id: str) -> Mapping[str, str]:
        return self._group_configs(group_id)

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(self, hb: Heartbeat) -> HeartbeatResult:
        error, message = self.ownership.error_for(hb.group_id), None
        if not error:
            error, message = self._invalid(hb)
        if error:
            return HeartbeatResult(error, message=message)
        if hb.member_epoch == JOIN_EPOCH and self.group(hb.group_id) is None:
            self._maybe_upgrade(hb.group_id)
        group = self._group_for(hb.group_id, hb.member_epoch, self._other_group_type)
        if isinstance(group, HeartbeatResult):
            return group
        if hb.member_epoch == LEAVE_EPOCH:
            return self._leave(group, hb.member_id)
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            return self._leave_for_now(group, hb.member_id)
        records: list[KeyValue] = []
        member = group.members.get(hb.member_id)
        joined = False
        if hb.member_epoch == JOIN_EPOCH:
            static = self._static_member(group, hb.instance_id)
            if static is not None and static.member_id != hb.member_id:
                if not static.static_left:
                    return HeartbeatResult(UnreleasedInstanceIdError.errno,
                                           message=f"instance {hb.instance_id!r} is member "
                                                   f"{static.member_id}")
                member, replaced = self._replace(group, static, hb.member_id or
                                                 str(uuid.uuid4()))
                records += replaced
            if member is None and len(group.members) >= self.config.max_size:
                return HeartbeatResult(GroupMaxSizeReachedError.errno,
                                       message=f"group.consumer.max.size is "
                                               f"{self.config.max_size}")
            if member is None:
                member = ConsumerMember(hb.member_id or str(uuid.uuid4()))
                group.members[member.member_id] = member
                joined = True
        elif member is None:
            return HeartbeatResult(UnknownMemberIdError.errno)
        elif not self._epoch_valid(member, hb):
            return HeartbeatResult(FencedMemberEpochError.errno,
                                   message=f"epoch {hb.member_epoch}, the member is at "
                                           f"{member.member_epoch}")
        owned = hb.owned if hb.member_epoch != JOIN_EPOCH else {}
        before = self._advance(group, member, hb, joined, owned, records)
        full = hb.member_epoch == JOIN_EPOCH or hb.owned is not None
        changed = member.current.assigned != before.assigned or \
            member.member_epoch != hb.member_epoch
        return HeartbeatResult(0, member.member_id, member.member_epoch,
                               dict(member.current.assigned) if full or changed else None)

    def _advance(self, group: ConsumerGroup, member: ConsumerMember, hb: Heartbeat,
                 joined: bool, owned: Assignment | None, records: list[KeyValue]) -> Reconciled:
        """One step of a member, whichever protocol it speaks: its session renewed, its
        changes taken (a new group epoch when they matter), the target assignment computed
        when the group epoch moved, and the member reconciled towards its target with what
        it says it ``owned``; ``records`` and the new ones are written. Returns the
        member's assignment before the step."""
        timeout = member.classic.session_timeout_ms if member.classic is not None \
            else self.session_timeout_ms(group.group_id)
        member.session_deadline_ms = self._clock() + timeout
        member.static_left = False
        changed = self._update_member(member, hb, joined)
        if changed or (member.classic is not None and hb.member_epoch == JOIN_EPOCH):
            records.append(self._consumer_metadata(group, member))
        topics = self._refresh_topics(group)
        if changed or topics:
            records += [*topics, *self._bump(group)]  # one new epoch for all of it
        if group.assignment_epoch != group.group_epoch:
            records += self._assign(group)
        before = member.current
        member.current = reconcile(before, group.target.get(member.member_id, {}),
                                   group.assignment_epoch, owned,
                                   lambda t, p: self._owned_by_other(group, member, t, p))
        if member.current != before or hb.member_epoch == JOIN_EPOCH:
            if member.current.member_epoch != before.member_epoch:
                member.previous_member_epoch = before.member_epoch
            records.append(_current_assignment(group, member))
        if member.current.state is MemberState.UNREVOKED_PARTITIONS:
            if member.revocation_deadline_ms is None:
                member.revocation_deadline_ms = self._clock() + member.rebalance_timeout_ms
        else:
            member.revocation_deadline_ms = None
        self._write(group, records)
        return before

    # ------------------------------------------------------------------ online migration

    def _maybe_upgrade(self, group_id: str) -> None:
        """A member of the consumer protocol joins a classic group with members: the group
        becomes a consumer group when the policy allows it, the classic group uses the
        consumer protocol and there is room for the joining member (Kafka's conditions);
        otherwise it stays classic and the join is refused by :meth:`_group_for`."""
        if self._classic is None or not self.config.migration_policy.upgrades:
            return
        classic = self._classic.snapshot(group_id)
        if classic is None or classic.protocol_type != CONSUMER_PROTOCOL_TYPE \
                or len(classic.members) >= self.config.max_size:
            return
        try:
            members = [self._converted(classic.generation_id, m) for m in classic.members]
        except ProtocolDecodeError:
            return  # a malformed subscription: Kafka refuses the upgrade too
        group = self.new_group(group_id)
        group.group_epoch = group.assignment_epoch = classic.generation_id
        for member in members:
            group.members[member.member_id] = member
            group.target[member.member_id] = member.current.assigned
        self._groups.setdefault(self.ownership.partition_for(group_id), {})[group_id] = group
        self._classic.hand_over(group_id)
        key = {"group_id": group_id}
        records = [self._consumer_metadata(group, m) for m in members]
        records.append(group_record(GROUP_METADATA, key, {"epoch": group.group_epoch}))
        records += [group_record(TARGET_ASSIGNMENT_MEMBER, {**key, "member_id": m.member_id},
                                 {"topic_partitions": wire_assignment(m.current.assigned)})
                    for m in members]
        records.append(group_record(TARGET_ASSIGNMENT_METADATA, key,
                                    {"assignment_epoch": group.assignment_epoch}))
        records += [_current_assignment(group, m) for m in members]
        self._write(group, records)

    def _converted(self, generation_id: int, classic: ClassicMemberState) -> ConsumerMember:
        """A classic member as a consumer-group member: stable at the classic generation,
        owning what its last assignment gave it."""
        subscription = classic.classic.subscription()
        assigned = self._topic_ids(
            ConsumerProtocolAssignment.decode(classic.assignment).partitions)
        return ConsumerMember(
            classic.member_id, rack_id=subscription.rack_id, client_id=classic.client_id,
            client_host=classic.client_host,
            subscribed_topics=tuple(sorted(set(subscription.topics))),
            previous_member_epoch=generation_id,
            session_deadline_ms=self._clock() + classic.classic.session_timeout_ms,
            instance_id=classic.instance_id, rebalance_timeout_ms=classic.rebalance_timeout_ms,
            current=Reconciled(MemberState.STABLE, generation_id, assigned),
            classic=classic.classic)

    def _topic_ids(self, partitions: list[tuple[str, list[int]]]) -> Assignment:
        """Partitions by topic name as an assignment by topic id (unknown topics dropped)."""
        assignment: dict[uuid.UUID, frozenset[int]] = {}
        for name, ids in partitions:
            if ids and self._topics.partition_count(name) is not None:
                topic_id = self._topics.topic_id(name)
                assignment[topic_id] = assignment.get(topic_id, frozenset()) | frozenset(ids)
        return assignment

    @staticmethod
    def _topic_names(group: ConsumerGroup, assignment: Assignment) -> list[tuple[str, list[int]]]:
        """An assignment by topic name (the classic protocol's), from the group's
        subscribed topics, which hold every topic it assigns."""
        names = {topic.topic_id: name for name, topic in group.subscribed.items()}
        return sorted((names[t], sorted(ps)) for t, ps in assignment.items() if t in names)

    def _maybe_downgrade(self, group: ConsumerGroup, generation_id: int) -> None:
        """The last member of the consumer protocol left: with classic members remaining
        and the policy allowing it, the group goes back to the classic coordinator at
        ``generation_id`` (the group epoch before the leave, as Kafka does, so that the
        classic members' next heartbeat says REBALANCE_IN_PROGRESS), which rebalances it
        at once (each member's target assignment is its assignment until then)."""
        if self._classic is None or not self.config.migration_policy.downgrades \
                or not group.members \
                or any(m.classic is None for m in group.members.values()):
            return
        members = tuple(ClassicMemberState(
            m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.classic, m.classic.encode_assignment(
                self._topic_names(group, group.target.get(m.member_id, {}))))
            for m in group.members.values() if m.classic is not None)
        records: list[KeyValue] = []
        for member in members:
            key = {"group_id": group.group_id, "member_id": member.member_id}
            records += [group_record(kind, key, None) for kind in self.records.member_kinds]
        key = {"group_id": group.group_id}
        records += [group_record(kind, key, None) for kind in (
            TARGET_ASSIGNMENT_METADATA, PARTITION_METADATA, GROUP_METADATA)]
        self._write(group, records)
        del self._groups[self.ownership.partition_for(group.group_id)][group.group_id]
        self._classic.take_back(ClassicGroupState(group.group_id, generation_id,
                                                  CONSUMER_PROTOCOL_TYPE, members))

    def _leave(self, group: ConsumerGroup, member_id: str) -> HeartbeatResult:
        epoch = group.group_epoch
        result = super()._leave(group, member_id)
        if not result.error:
            self._maybe_downgrade(group, epoch)
        return result

    def expire_members(self) -> None:
        """Members whose session or revocation time ran out leave; a group left with only
        classic members goes back to the classic protocol."""
        now = self._clock()
        for group in self.groups():
            expired = [m for m in group.members.values() if m.expired(now)]
            if not expired:
                continue
            epoch = group.group_epoch
            records: list[KeyValue] = []
            for member in expired:
                records += self._remove(group, member.member_id)
            self._write(group, records)
            if any(m.classic is None for m in expired):
                self._maybe_downgrade(group, epoch)

    # ------------------------------------------------------------------ classic members

    def classic_join(self, request: JoinRequest) -> JoinResult | None:
        """JoinGroup of a classic member to a consumer group with members (None: the group
        id is not one; an empty consumer group is deleted first, so the classic
        coordinator takes the id over). The member's subscription and owned partitions
        come from its protocol metadata; it is reconciled like any member and answered at
        once with its member epoch as the generation, as a follower (the group's assignor,
        not a leader, assigns)."""
        group = self.group(request.group_id)
        if group is None:
            return None
        if not group.members:
            self.delete(request.group_id)
            return None
        member_id = request.member_id or str(uuid.uuid4())

        def fail(error: int) -> JoinResult:
            return JoinResult(error, member_id=member_id)

        if request.protocol_type != CONSUMER_PROTOCOL_TYPE or not request.protocols:
            return fail(InconsistentGroupProtocolError.errno)
        classic = ClassicMetadata(request.session_timeout_ms, tuple(request.protocols))
        try:
            subscription = classic.subscription()
        except ProtocolDecodeError:
            return fail(InconsistentGroupProtocolError.errno)
        member = group.members.get(member_id)
        if member is not None and member.classic is None:
            return fail(InconsistentGroupProtocolError.errno)  # a consumer-protocol member
        if member is None and len(group.members) >= self.config.max_size:
            return fail(GroupMaxSizeReachedError.errno)
        if not request.member_id and request.require_known_member_id \
                and request.group_instance_id is None:
            return fail(MemberIdRequiredError.errno)
        records: list[KeyValue] = []
        static = self._static_member(group, request.group_instance_id)
        if static is not None and static.member_id != member_id:
            if request.member_id:
                return fail(FencedInstanceIdError.errno)
            # a restarted static member takes its place (whichever protocol it spoke)
            member, records = self._replace(group, static, member_id)
        joined = member is None
        if member is None:
            member = group.members[member_id] = ConsumerMember(member_id)
        member.classic = classic
        hb = Heartbeat(request.group_id, member_id, JOIN_EPOCH, request.group_instance_id,
                       subscription.rack_id, request.rebalance_timeout_ms,
                       subscription.topics, client_id=request.client_id,
                       client_host=request.client_host)
        self._advance(group, member, hb, joined,
                      self._topic_ids(owned_partitions(classic)), records)
        return JoinResult(0, member_id=member_id, generation_id=member.member_epoch,
                          protocol_type=CONSUMER_PROTOCOL_TYPE,
                          protocol_name=classic.protocols[0][0])

    def _classic_member(self, group: ConsumerGroup, member_id: str,
                        instance_id: str | None) -> ConsumerMember | int:
        """The classic member a SyncGroup, Heartbeat or LeaveGroup names, or the error."""
        member = group.members.get(member_id)
        if instance_id is not None:
            static = self._static_member(group, instance_id)
            if static is None:
                return UnknownMemberIdError.errno
            if member_id and static.member_id != member_id:
                return FencedInstanceIdError.errno
            member = static
        if member is None or member.classic is None:
            return UnknownMemberIdError.errno
        return member

    def classic_sync(self, group_id: str, generation_id: int, member_id: str,
                     instance_id: str | None) -> SyncResult | None:
        """SyncGroup of a classic member: its current assignment in the consumer protocol's
        encoding (None: not a consumer group here)."""
        group = self.group(group_id)
        if group is None:
            return None
        member = self._classic_member(group, member_id, instance_id)
        if isinstance(member, int):
            return SyncResult(member)
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return SyncResult(IllegalGenerationError.errno)
        if group.group_epoch > member.member_epoch \
                and member.current.state is not MemberState.UNREVOKED_PARTITIONS:
            return SyncResult(RebalanceInProgressError.errno)  # rejoin to catch up first
        member.session_deadline_ms = self._clock() + member.classic.session_timeout_ms
        return SyncResult(0, member.classic.encode_assignment(
            self._topic_names(group, member.current.assigned)), CONSUMER_PROTOCOL_TYPE,
            member.classic.protocols[0][0])

    def classic_heartbeat(self, group_id: str, generation_id: int, member_id: str,
                          instance_id: str | None) -> int | None:
        """Heartbeat of a classic member; REBALANCE_IN_PROGRESS tells it to rejoin when the
        group epoch moved past it, it has partitions to revoke, or partitions it waits for
        were released (None: not a consumer group here)."""
        group = self.group(group_id)
        if group is None:
            return None
        member = self._classic_member(group, member_id, instance_id)
        if isinstance(member, int):
            return member
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return IllegalGenerationError.errno
        member.session_deadline_ms = self._clock() + member.classic.session_timeout_ms
        state = member.current.state
        waiting = any(self._owned_by_other(group, member, t, p)
                      for t, ps in group.target.get(member.member_id, {}).items() for p in ps
                      if p not in member.current.assigned.get(t, frozenset()))
        if member.member_epoch < group.group_epoch \
                or state is MemberState.UNREVOKED_PARTITIONS \
                or (state is MemberState.UNRELEASED_PARTITIONS and not waiting):
            return RebalanceInProgressError.errno
        return 0

    def classic_leave(self, group_id: str, member_id: str,
                      instance_id: str | None) -> int | None:
        """LeaveGroup of a classic member (None: not a consumer group here)."""
        group = self.group(group_id)
        if group is None:
            return None
        member = self._classic_member(group, member_id, instance_id)
        if isinstance(member, int):
            return member
        self._write(group, self._remove(group, member.member_id))
        return 0

    def _invalid(self, hb: Heartbeat) -> tuple[int, str | None]:
        if not hb.group_id:
            return InvalidRequestError.errno, "group_id is empty"
        if hb.member_epoch < STATIC_LEAVE_EPOCH or (hb.member_epoch != JOIN_EPOCH
                                                   and not hb.member_id):
            return InvalidRequestError.errno, "member_id is required past the join"
        if hb.subscribed_topic_regex:  # librdkafka sends "" for "no regex"
            try:
                compile_topic_regex(hb.subscribed_topic_regex)
            except TopicRegexError as exc:
                return InvalidRegularExpressionError.errno, str(exc)
        if hb.member_epoch == JOIN_EPOCH:
            if hb.subscribed_topic_names is None and not hb.subscribed_topic_regex:
                return InvalidRequestError.errno, "a joining member names its topics"
            if hb.rebalance_timeout_ms < 0:
                return InvalidRequestError.errno, "a joining member gives its rebalance timeout"
        assignor = hb.server_assignor
        if assignor is not None and assignor not in self.config.assignors:
            return UnsupportedAssignorError.errno, \
                f"assignor {assignor!r} is not one of {', '.join(self.config.assignors)}"
        return 0, None

    @staticmethod
    def _epoch_valid(member: ConsumerMember, hb: Heartbeat) -> bool:
        """The current epoch, or the previous one if the member owns nothing it should not
        (it missed the answer that moved it on)."""
        if hb.member_epoch == member.member_epoch:
            return True
        if hb.member_epoch != member.previous_member_epoch or hb.owned is None:
            return False
        return all(ps <= member.current.assigned.get(t, frozenset())
                   for t, ps in hb.owned.items())

    @staticmethod
    def _update_member(member: ConsumerMember, hb: Heartbeat, joined: bool) -> bool:
        """Takes the heartbeat's changes; True if the group epoch must move (a new member,
        or a subscription, rack or assignor change)."""
        member.client_id, member.client_host = hb.client_id, hb.client_host
        if hb.instance_id is not None:
            member.instance_id = hb.instance_id
        if hb.rebalance_timeout_ms >= 0:
            member.rebalance_timeout_ms = hb.rebalance_timeout_ms
        bump = joined
        if hb.rack_id is not None and hb.rack_id != member.rack_id:
            member.rack_id, bump = hb.rack_id, True
        if hb.subscribed_topic_names is not None:
            topics = tuple(sorted(set(hb.subscribed_topic_names)))
            if topics != member.subscribed_topics:
                member.subscribed_topics, bump = topics, True
        if hb.subscribed_topic_regex is not None:
            regex = hb.subscribed_topic_regex or None
            if regex != member.subscribed_regex:
                member.subscribed_regex, bump = regex, True
        if hb.server_assignor is not None and hb.server_assignor != member.server_assignor:
            member.server_assignor, bump = hb.server_assignor, True
        return bump

    def _owned_by_other(self, group: ConsumerGroup, member: ConsumerMember,
                        topic_id: uuid.UUID, partition: int) -> bool:
        return any(other is not member and other.owns(topic_id, partition)
                   for other in group.members.values())

    @staticmethod
    def _static_member(group: ConsumerGroup, instance_id: str | None) -> ConsumerMember | None:
        if instance_id is None:
            return None
        return next((m for m in group.members.values() if m.instance_id == instance_id), None)

    def _leave_for_now(self, group: ConsumerGroup, member_id: str) -> HeartbeatResult:
        """A static member leaving with epoch -2 (a restart): it keeps its partitions and
        its place, without a rebalance, until its session times out or a member with its
        instance id takes its place."""
        member = group.members.get(member_id)
        if member is None:
            return HeartbeatResult(UnknownMemberIdError.errno)
        if member.instance_id is None:
            return HeartbeatResult(InvalidRequestError.errno,
                                   message="epoch -2 is for static members (instance_id)")
        member.static_left = True
        self._write(group, [_current_assignment(group, member)])
        return HeartbeatResult(0, member_id, STATIC_LEAVE_EPOCH)

    def _replace(self, group: ConsumerGroup, old: ConsumerMember,
                 member_id: str) -> tuple[ConsumerMember, list[KeyValue]]:
        """A static member back under a new member id: it takes the old one's place and
        partitions, and the group does not rebalance."""
        del group.members[old.member_id]
        member = replace(old, member_id=member_id, static_left=False, previous_member_epoch=-1,
                         current=Reconciled(MemberState.STABLE, JOIN_EPOCH,
                                            old.current.assigned))
        group.members[member_id] = member
        target = group.target.pop(old.member_id, {})
        group.target[member_id] = target
        gone = {"group_id": group.group_id, "member_id": old.member_id}
        records = [group_record(kind, gone, None) for kind in self.records.member_kinds]
        records.append(self._consumer_metadata(group, member))
        records.append(group_record(TARGET_ASSIGNMENT_MEMBER, {
            "group_id": group.group_id, "member_id": member_id},
            {"topic_partitions": wire_assignment(target)}))
        return member, records

    def _remove(self, group: ConsumerGroup, member_id: str) -> list[KeyValue]:
        group.target.pop(member_id, None)
        records = super()._remove(group, member_id)
        self._forget_unused_regexes(group)
        return records

    @staticmethod
    def _forget_unused_regexes(group: ConsumerGroup) -> None:
        """A regex no member subscribes with any more is forgotten at once (as Kafka
        deletes its resolution with the change): subscribing with it again resolves it
        anew."""
        in_use = {m.subscribed_regex for m in group.members.values()}
        for regex in set(group.resolved_regexes) - in_use:
            del group.resolved_regexes[regex]

    def _consumer_metadata(self, group: ConsumerGroup, member: ConsumerMember) -> KeyValue:
        classic = member.classic
        return self._member_metadata(group, member, {
            "instance_id": member.instance_id, "subscribed_topic_regex": member.subscribed_regex,
            "rebalance_timeout_ms": member.rebalance_timeout_ms,
            "server_assignor": member.server_assignor,
            "classic_member_metadata": None if classic is None else {
                "session_timeout_ms": classic.session_timeout_ms,
                "supported_protocols": [{"name": name, "metadata": metadata}
                                        for name, metadata in classic.protocols]}})

    def _subscriptions(self, group: ConsumerGroup) -> dict[str, frozenset[str]]:
        """Each member's topics: those it names and those its regex matched when the group
        last resolved it."""
        return {m.member_id: frozenset(m.subscribed_topics) | group.resolved_regexes.get(
                    m.subscribed_regex or "", frozenset())
                for m in group.members.values()}

    def refresh_regexes(self) -> None:
        """Resolves the regexes of every group, as Kafka 4 does, apart from the heartbeats:
        a regex a member subscribes with matches nothing until this runs (a member
        subscribing to a regex and to topic names gets the named topics first, the matched
        ones once the regex is resolved), and every regex is resolved again when topics
        were created or deleted. A change of what the members subscribe to bumps the group
        epoch; regexes no member uses any more are forgotten."""
        names: frozenset[str] | None = None
        for group in self.groups():
            in_use = {m.subscribed_regex for m in group.members.values() if m.subscribed_regex}
            if not in_use and not group.resolved_regexes:
                continue
            if names is None:
                names = self._topics.names()
            if in_use == set(group.resolved_regexes) and names == group.regex_topics:
                continue
            self._resolve(group, in_use, names)
            records = self._refresh_topics(group)
            if records:
                self._write(group, [*records, *self._bump(group)])

    @staticmethod
    def _resolve(group: ConsumerGroup, regexes: set[str], names: frozenset[str]) -> None:
        group.resolved_regexes = {p: matching_topics(p, names) for p in sorted(regexes)}
        group.regex_topics = names

    def _refresh_topics(self, group: ConsumerGroup) -> list[KeyValue]:
        """The subscribed topics now; when they changed, the record saying so (the
        caller bumps the group epoch)."""
        self._forget_unused_regexes(group)
        names = sorted(set().union(*self._subscriptions(group).values()))
        now: dict[str, SubscribedTopic] = {}
        for name in names:
            count = self._topics.partition_count(name)
            if count is not None:
                now[name] = SubscribedTopic(self._topics.topic_id(name), count,
                                            self._topics.partition_racks(name))
        if now == group.subscribed:
            return []
        group.subscribed = now
        return [_partition_metadata(group)]

    def _assign(self, group: ConsumerGroup) -> list[KeyValue]:
        """The target assignment of the group epoch, with the assignor the members ask for
        (the most asked for; the broker's first when none asks)."""
        asked = [m.server_assignor for m in group.members.values() if m.server_assignor]
        group.assignor = max(sorted(set(asked)), key=asked.count) if asked \
            else self.config.assignors[0]
        subscriptions = self._subscriptions(group)
        racks = {m.member_id: m.rack_id for m in group.members.values()}
        target = ASSIGNORS[group.assignor](subscriptions, group.subscribed, group.target, racks)
        records = []
        for member_id, assignment in sorted(target.items()):
            if assignment != group.target.get(member_id):
                records.append(group_record(
                    TARGET_ASSIGNMENT_MEMBER, {"group_id": group.group_id,
                                               "member_id": member_id},
                    {"topic_partitions": wire_assignment(assignment)}))
        group.target = target
        group.assignment_epoch = group.group_epoch
        records.append(group_record(TARGET_ASSIGNMENT_METADATA, {"group_id": group.group_id},
                                       {"assignment_epoch": group.assignment_epoch}))
        return records

    # ------------------------------------------------------------------ offsets, timers, admin

    def validate_commit(self, group_id: str, member_id: str, member_epoch: int, *,
                        member_epoch_api: bool = True) -> int | None:
        """OffsetCommit's check of a consumer group's committer (None: no consumer group of
        that id here, the classic rules apply). A simple commit (epoch -1, with or without a
        member id: a client that makes its id itself sends it before it joins) is accepted
        only by an empty group. A classic member commits with its generation, which must be
        its member epoch (ILLEGAL_GENERATION); a member of the consumer protocol must use a
        request that carries the member epoch (``member_epoch_api``, OffsetCommit v9+), as
        Kafka requires."""
        group = self.group(group_id)
        if group is None:
            return None
        member = group.members.get(member_id)
        if member is not None and member.classic is not None:
            return 0 if member_epoch == member.member_epoch else IllegalGenerationError.errno
        if member_id and not member_epoch_api:
            return UnsupportedVersionError.errno
        if member_epoch < 0 and not group.members:
            return 0
        if member is None:
            return UnknownMemberIdError.errno
        if member_epoch > member.member_epoch:
            return FencedMemberEpochError.errno
        if member_epoch < member.member_epoch:
            return StaleMemberEpochError.errno
        return 0

    def subscribed_topics(self, group_id: str) -> frozenset[str]:
        """The topics the consumer group's members subscribe to now (by name or regex):
        OffsetDelete keeps their offsets (GROUP_SUBSCRIBED_TO_TOPIC)."""
        group = self.group(group_id)
        if group is None:
            return frozenset()
        return frozenset().union(*self._subscriptions(group).values())

    def delete(self, group_id: str) -> int:
        """DeleteGroups of a consumer group: only an empty one (its offsets are deleted by
        the caller)."""
        group = self.group(group_id)
        if group is None:
            return GroupIdNotFoundError.errno
        if group.members:
            return NonEmptyGroupError.errno
        key = {"group_id": group_id}
        self._write(group, [group_record(kind, key, None) for kind in (
            TARGET_ASSIGNMENT_METADATA, PARTITION_METADATA, GROUP_METADATA)])
        del self._groups[self.ownership.partition_for(group_id)][group_id]
        return 0

    # ------------------------------------------------------------------ the runtime's side

    def loader(self, partition: int) -> ConsumerGroupLoader:
        return ConsumerGroupLoader(self, partition)

    def install(self, partition: int, groups: dict[str, ConsumerGroup]) -> None:
        """A loaded partition's groups; a member that owes a revocation gets a fresh
        rebalance timeout too."""
        super().install(partition, groups)
        names = self._topics.names()
        for group in groups.values():
            # the loaded subscription metadata includes what the regexes matched: resolve
            # them now, not a rebalance later
            self._resolve(group, {m.subscribed_regex for m in group.members.values()
                                  if m.subscribed_regex}, names)
            for member in group.members.values():
                if member.current.state is MemberState.UNREVOKED_PARTITIONS:
                    member.revocation_deadline_ms = self._clock() + member.rebalance_timeout_ms

    def topics_deleted(self, deleted: Callable[[str], bool], partition: int | None) -> None:
        """Deleted topics drop out of the groups' assignments at the next heartbeat (their
        metadata no longer matches); nothing to do eagerly."""



def _from_wire(topics: list[dict[str, Any]]) -> Assignment:
    return {t["topic_id"]: frozenset(t["partitions"]) for t in topics if t["partitions"]}


def _current_assignment(group: ConsumerGroup, member: ConsumerMember) -> KeyValue:
    current = member.current
    return group_record(CURRENT_MEMBER_ASSIGNMENT, {"group_id": group.group_id,
                                                       "member_id": member.member_id}, {
        # a static member away for now is written at epoch -2 (as Kafka does), its own
        # epoch kept as the previous one
        "member_epoch": STATIC_LEAVE_EPOCH if member.static_left else current.member_epoch,
        "previous_member_epoch": current.member_epoch if member.static_left
        else member.previous_member_epoch,
        "state": int(current.state),
        "assigned_partitions": wire_assignment(current.assigned),
        "partitions_pending_revocation": wire_assignment(current.pending_revocation)})


def _partition_metadata(group: ConsumerGroup) -> KeyValue:
    return group_record(PARTITION_METADATA, {"group_id": group.group_id}, {"topics": [
        {"topic_id": topic.topic_id, "topic_name": name, "num_partitions": topic.partitions,
         "partition_metadata": [{"partition": p, "racks": sorted(racks)}
                                for p, racks in enumerate(topic.racks) if racks]}
        for name, topic in sorted(group.subscribed.items())]})


def _racks_from_wire(topic: dict[str, Any]) -> tuple[frozenset[str], ...]:
    """A topic's partition racks as ConsumerGroupPartitionMetadata holds them (only the
    partitions with racks are listed)."""
    listed = {p["partition"]: frozenset(p["racks"]) for p in topic["partition_metadata"]}
    if not listed:
        return ()
    return tuple(listed.get(p, frozenset()) for p in range(topic["num_partitions"]))


class ConsumerGroupLoader(ModernGroupLoader[ConsumerGroup]):
    """Replays one ``__consumer_offsets`` partition's consumer-group records."""

    def __init__(self, groups: ConsumerGroups, partition: int) -> None:
        super().__init__(groups, partition)
        self._consumer_groups = groups

    def _member(self, group: ConsumerGroup, member_id: str) -> ConsumerMember:
        return group.members.setdefault(member_id, ConsumerMember(member_id))

    def _apply_member_metadata(self, member: ConsumerMember, value: dict[str, Any]) -> None:
        member.instance_id = value["instance_id"]
        member.subscribed_regex = value["subscribed_topic_regex"]
        member.rebalance_timeout_ms = value["rebalance_timeout_ms"]
        member.server_assignor = value["server_assignor"]
        classic = value["classic_member_metadata"]
        member.classic = None if classic is None else ClassicMetadata(
            classic["session_timeout_ms"],
            tuple((p["name"], bytes(p["metadata"])) for p in classic["supported_protocols"]))

    def _apply_other(self, group: ConsumerGroup, kind: GroupRecordType, member_id: str,
                     value: dict[str, Any] | None) -> None:
        if kind is PARTITION_METADATA:
            group.subscribed = {} if value is None else {
                t["topic_name"]: SubscribedTopic(t["topic_id"], t["num_partitions"],
                                                 _racks_from_wire(t))
                for t in value["topics"]}
        elif kind is TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                group.target.pop(member_id, None)
            else:
                group.target[member_id] = _from_wire(value["topic_partitions"])
        elif kind is CURRENT_MEMBER_ASSIGNMENT and value is not None:
            member = self._member(group, member_id)
            member.static_left = value["member_epoch"] == STATIC_LEAVE_EPOCH
            epoch = value["previous_member_epoch"] if member.static_left \
                else value["member_epoch"]
            member.previous_member_epoch = -1 if member.static_left \
                else value["previous_member_epoch"]
            member.current = Reconciled(MemberState(value["state"]), epoch,
                                        _from_wire(value["assigned_partitions"]),
                                        _from_wire(value["partitions_pending_revocation"]))

    def complete(self) -> None:
        for group in self._groups.values():
            group.assignor = next((m.server_assignor for m in group.members.values()
                                   if m.server_assignor),
                                  self._consumer_groups.config.assignors[0])
        super().complete()
