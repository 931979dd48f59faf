"""The classic group coordinator: membership, rebalances and offset commits.

Sans-IO. Time and timers come from an injected :class:`Scheduler`, persistence from an
injected :class:`GroupStore`, and responses that Kafka parks (JoinGroup until the rebalance
completes, SyncGroup until the leader's assignment arrives) are delivered through callbacks.
The decisions follow Kafka's ``GroupCoordinator``; comments name the rule where the reason is
not obvious.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import NamedTuple

from kafkalite.errors import KafkaError
from kafkalite_server.coordinator.ownership import Ownership
from kafkalite_server.group import error_codes as codes
from kafkalite_server.group.config import GroupCoordinatorConfig
from kafkalite_server.group.consumer_migration import (
    ClassicGroupState,
    ClassicMemberState,
    ClassicMetadata,
)
from kafkalite_server.group.expiry import expired_offsets
from kafkalite_server.group.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from kafkalite_server.group.member import GroupMember, JoinCallback, SyncCallback
from kafkalite_server.group.offsets import OffsetAndMetadata, OffsetCommitEntry, TopicPartition
from kafkalite_server.group.results import (
    GroupDescription,
    GroupListing,
    JoinResult,
    LeaveResult,
    MemberDescription,
    OffsetDeleteResult,
    OffsetFetchResult,
    SyncResult,
)
from kafkalite_server.group.state import GroupState
from kafkalite_server.group.store import GroupMetadataRecord, GroupStore, LoadedGroup, MemberRecord
from kafkalite_server.group.timers import Scheduler, TimerHandle

log = logging.getLogger(__name__)

#: A new member cannot heartbeat and its connection is muted while its JoinGroup is parked;
#: this bounds how long such a member is kept if it never comes back (Kafka's constant).
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE


def default_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


class LeavingMember(NamedTuple):
    """One member named by a LeaveGroup request (v3+ names several, maybe by instance id)."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True)
class JoinRequest:
    """The fields of a JoinGroup request the coordinator acts on."""

    group_id: str
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    group_instance_id: str | None = None
    #: JoinGroup v4+ (KIP-394): a member without an id first gets one back with
    #: MEMBER_ID_REQUIRED, so a client that times out cannot leave ghost members behind.
    require_known_member_id: bool = False
    #: JoinGroup v9+ (KIP-814): the member can be told it leads but must skip the assignment.
    supports_skip_assignment: bool = False


def member_error(group: ClassicGroup, member_id: str, group_instance_id: str | None) -> int:
    """Whether ``member_id`` may act in the group: a request naming a group.instance.id
    must come from the member id now holding it (else FENCED_INSTANCE_ID, KIP-345)."""
    if group_instance_id is not None:
        current = group.static_member_id(group_instance_id)
        if current is None:
            return codes.UNKNOWN_MEMBER_ID
        return codes.NONE if current == member_id else codes.FENCED_INSTANCE_ID
    return codes.NONE if member_id in group.members else codes.UNKNOWN_MEMBER_ID


PendingOffsets = Callable[[], Mapping[str, AbstractSet[TopicPartition]]]


class GroupCoordinator:
    def __init__(
        self,
        config: GroupCoordinatorConfig,
        scheduler: Scheduler,
        store: GroupStore,
        member_id_factory: Callable[[str], str] = default_member_id,
        pending_transactional_offsets: PendingOffsets | None = None,
        ownership: Ownership | None = None,
        active_groups: Callable[[], AbstractSet[str]] = frozenset,
    ) -> None:
        """``pending_transactional_offsets``: per group, the partitions with offsets
        committed in a transaction that has not ended (see :mod:`.txn_offsets`); retention
        keeps those offsets and their group. ``ownership``: which ``__consumer_offsets``
        partitions this broker coordinates (the runtime's; a fresh one, owning nothing,
        by default). ``active_groups``: ids of groups run by another protocol (KIP-848
        consumer groups) that have members now: retention keeps their offsets, which this
        coordinator holds for them."""
        self.config = config
        self.ownership = ownership or Ownership(config.offsets_topic_num_partitions)
        self._pending_transactional_offsets = pending_transactional_offsets or dict
        self._active_groups = active_groups
        self._scheduler = scheduler
        self._store = store
        self._new_member_id = member_id_factory
        self._groups: dict[str, ClassicGroup] = {}
        #: The next offsets.retention.check.interval.ms pass; runs while partitions are owned.
        self._expiry_timer: TimerHandle | None = None

    # -- partition ownership ------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return self.ownership.partition_for(group_id)

    def group(self, group_id: str) -> ClassicGroup | None:
        return self._groups.get(group_id)

    def groups(self) -> list[ClassicGroup]:
        """Every group coordinated here now, with its committed offsets (the lag metrics)."""
        return list(self._groups.values())

    def install(self, partition: int, loaded: Iterable[LoadedGroup]) -> None:
        """Install the groups replayed from an owned partition's log: Empty, with their
        offsets."""
        now = self._scheduler.now_ms()
        for entry in loaded:
            if self.partition_for(entry.group_id) != partition:
                log.warning(
                    "group %s found in offsets partition %d; ignored", entry.group_id, partition
                )
                continue
            group = ClassicGroup(entry.group_id, partition, now)
            if entry.metadata is not None:
                group.generation_id = entry.metadata.generation_id
                group.protocol_type = entry.metadata.protocol_type or None
                if not entry.metadata.members and entry.metadata.state_timestamp_ms >= 0:
                    # Stored when it became Empty: offset retention counts from then. A group
                    # stored with members lost them in the restart, so it is Empty from now.
                    group.state_timestamp_ms = entry.metadata.state_timestamp_ms
            group.offsets = dict(entry.offsets)
            self._groups[entry.group_id] = group
        self._schedule_offset_expiry()

    def unload_partition(self, partition: int) -> None:
        """Leadership of ``partition`` moved away: drop its groups, answer NOT_COORDINATOR."""
        for group in [g for g in self._groups.values() if g.partition == partition]:
            self._kill_group(group, codes.NOT_COORDINATOR)

    def shutdown(self) -> None:
        for partition in sorted({group.partition for group in self._groups.values()}):
            self.unload_partition(partition)
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None

    def _validate_group_status(self, group_id: str, *, allow_empty_id: bool = False) -> int:
        if not group_id and not allow_empty_id:
            return codes.INVALID_GROUP_ID
        return self.ownership.error_for(group_id)

    def _is_current(self, group: ClassicGroup) -> bool:
        return self._groups.get(group.group_id) is group

    def _create_group(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(group_id, self.partition_for(group_id), self._scheduler.now_ms())
        self._groups[group_id] = group
        return group

    # -- JoinGroup ----------------------------------------------------------------------------

    def join_group(self, request: JoinRequest, respond: JoinCallback) -> None:
        """Answer now (errors, MEMBER_ID_REQUIRED, a rejoin that changes nothing) or park the
        response until the rebalance completes."""

        def fail(error: int) -> None:
            respond(JoinResult(error, member_id=request.member_id))

        error = self._validate_group_status(request.group_id)
        if error:
            return fail(error)
        timeout = request.session_timeout_ms
        if not (
            self.config.group_min_session_timeout_ms
            <= timeout
            <= self.config.group_max_session_timeout_ms
        ):
            return fail(codes.INVALID_SESSION_TIMEOUT)
        group = self._groups.get(request.group_id)
        if group is None:
            if request.member_id:
                return fail(codes.UNKNOWN_MEMBER_ID)
            if not (request.protocol_type and request.protocols):
                return fail(codes.INCONSISTENT_GROUP_PROTOCOL)
            group = self._create_group(request.group_id)
        if group.is_state(GroupState.DEAD):
            return fail(codes.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(request.protocol_type, request.protocols):
            return fail(codes.INCONSISTENT_GROUP_PROTOCOL)
        if not request.member_id:
            self._join_new_member(group, request, respond)
        else:
            self._join_known_member(group, request, respond)
        if group.is_state(PREPARING):
            self._try_complete_join(group)

    def _join_new_member(
        self, group: ClassicGroup, request: JoinRequest, respond: JoinCallback
    ) -> None:
        # Kafka names a static member after its instance id, a dynamic one after its client.
        member_id = self._new_member_id(request.group_instance_id or request.client_id)
        if group.static_member_id(request.group_instance_id) is not None:
            self._rejoin_static_member(group, request, member_id, respond)
            return
        if request.require_known_member_id and request.group_instance_id is None:
            group.pending_members[member_id] = self._scheduler.call_later(
                request.session_timeout_ms, lambda: self._expire_pending_member(group, member_id)
            )
            respond(JoinResult(codes.MEMBER_ID_REQUIRED, member_id=member_id))
            return
        self._add_member_and_rebalance(group, request, member_id, respond)

    def _join_known_member(
        self, group: ClassicGroup, request: JoinRequest, respond: JoinCallback
    ) -> None:
        member_id = request.member_id
        if member_id in group.pending_members and request.group_instance_id is None:
            group.pending_members.pop(member_id).cancel()
            self._add_member_and_rebalance(group, request, member_id, respond)
            return
        error = member_error(group, member_id, request.group_instance_id)
        member = group.members.get(member_id)
        if error or member is None or group.is_state(GroupState.EMPTY):
            respond(JoinResult(error or codes.UNKNOWN_MEMBER_ID, member_id=member_id))
        elif group.is_state(PREPARING):
            self._update_member_and_rebalance(group, member, request, respond)
        elif group.is_state(COMPLETING) and member.matches(request.protocols):
            # It lost its JoinGroup response; resend this generation's.
            respond(self._join_result(group, member))
        elif (
            group.is_state(GroupState.STABLE)
            and member.matches(request.protocols)
            and not group.is_leader(member_id)
        ):
            respond(self._join_result(group, member))
        else:
            # Changed metadata, or the leader asking for a new assignment (e.g. topics changed).
            self._update_member_and_rebalance(group, member, request, respond)

    def _join_result(self, group: ClassicGroup, member: GroupMember) -> JoinResult:
        return JoinResult(
            codes.NONE,
            member_id=member.member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id or "",
            members=group.joined_members() if group.is_leader(member.member_id) else [],
        )

    def _add_member_and_rebalance(
        self, group: ClassicGroup, request: JoinRequest, member_id: str, respond: JoinCallback
    ) -> None:
        member = GroupMember(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=list(request.protocols),
            is_new=True,
            join_callback=respond,
        )
        if group.is_state(PREPARING) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._schedule_expiry(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)

    def _rejoin_static_member(
        self, group: ClassicGroup, request: JoinRequest, new_member_id: str, respond: JoinCallback
    ) -> None:
        """KIP-345: a static member came back without its member id (it restarted). It takes
        over the old member's place under a new id, and the old id is fenced. In a Stable
        group whose protocol choice stays the same it gets its old assignment back with no
        rebalance, so nobody else gives up partitions."""
        instance_id = request.group_instance_id
        assert instance_id is not None
        previous_leader = group.leader_id
        member = group.members[group.static_members[instance_id]]
        old_member_id = member.member_id
        fenced = JoinResult(codes.FENCED_INSTANCE_ID, member_id=old_member_id)
        member.answer_join(fenced)
        member.answer_sync(SyncResult(codes.FENCED_INSTANCE_ID))
        before = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        group.replace_static_member(instance_id, new_member_id)
        member.protocols = list(request.protocols)
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        member.join_callback = respond
        self._schedule_expiry(group, member, member.session_timeout_ms)
        if group.is_state(GroupState.STABLE):
            if group.select_protocol() != group.protocol_name:
                self._prepare_rebalance(group)
                return
            try:
                self._store.store_group(
                    group.partition, group.group_id, self._metadata_record(group, {})
                )
            except (KafkaError, OSError) as exc:
                log.warning("group %s: storing a static rejoin failed: %s", group.group_id, exc)
                group.replace_static_member(instance_id, old_member_id)
                member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = before
                error = codes.storage_error_code(exc, group_metadata=True)
                member.answer_join(JoinResult(error, member_id=new_member_id))
                return
            # A Stable group would not hand out a new assignment, so a returning leader must
            # not assign. KIP-814: one that can skip the assignment (JoinGroup v9+) is told it
            # leads, with the members' metadata, so it watches what they subscribe to and
            # rebalances when that changes; an older one is given the leader id from before,
            # so it does not take itself for the leader.
            leads = request.supports_skip_assignment and group.is_leader(new_member_id)
            member.answer_join(
                JoinResult(
                    codes.NONE,
                    member_id=new_member_id,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader_id=new_member_id if leads else previous_leader or "",
                    members=group.joined_members() if leads else [],
                    skip_assignment=leads,
                )
            )
        elif group.is_state(COMPLETING):
            # The leader may have assigned to the old id already: start over with the new one.
            self._prepare_rebalance(group)

    def _update_member_and_rebalance(
        self, group: ClassicGroup, member: GroupMember, request: JoinRequest, respond: JoinCallback
    ) -> None:
        member.protocols = list(request.protocols)
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        # A member that sends JoinGroup again while parked gave up on the first request;
        # answer it rather than leave its connection waiting forever.
        member.answer_join(JoinResult(codes.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.join_callback = respond
        self._maybe_prepare_rebalance(group)

    # -- rebalance ----------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.is_state(GroupState.STABLE, COMPLETING, GroupState.EMPTY):
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: ClassicGroup, *, initial_delay: bool = True) -> None:
        """Open a join phase; an empty group's first one waits the initial rebalance delay
        unless ``initial_delay`` is off (a group whose members are all there already)."""
        if group.is_state(COMPLETING):
            self._reset_and_propagate_assignment_error(group, codes.REBALANCE_IN_PROGRESS)
        was_empty = group.is_state(GroupState.EMPTY) and initial_delay
        group.transition_to(PREPARING, self._scheduler.now_ms())
        group.cancel_join_timer()
        if was_empty:
            delay = self.config.group_initial_rebalance_delay_ms
            self._schedule_initial_join(group, delay, max(group.rebalance_timeout_ms - delay, 0))
        else:
            group.join_timer = self._scheduler.call_later(
                group.rebalance_timeout_ms, lambda: self._on_join_deadline(group)
            )
            self._try_complete_join(group)  # e.g. the last member left: nobody to wait for

    def _schedule_initial_join(self, group: ClassicGroup, delay_ms: int, remaining_ms: int) -> None:
        """Kafka's InitialDelayedJoin: wait ``delay_ms``; if members kept arriving, wait again,
        in steps of the configured delay, up to the rebalance timeout in total."""
        group.join_timer = self._scheduler.call_later(
            delay_ms, lambda: self._on_initial_delay_elapsed(group, remaining_ms)
        )
        group.in_initial_delay = True

    def _on_initial_delay_elapsed(self, group: ClassicGroup, remaining_ms: int) -> None:
        group.join_timer = None
        if not self._is_current(group) or not group.is_state(PREPARING):
            return
        if group.new_member_added and remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
            self._schedule_initial_join(group, delay, max(remaining_ms - delay, 0))
            return
        self._complete_join(group)

    def _on_join_deadline(self, group: ClassicGroup) -> None:
        group.join_timer = None
        if self._is_current(group) and group.is_state(PREPARING):
            self._complete_join(group)

    def _try_complete_join(self, group: ClassicGroup) -> None:
        if (
            group.is_state(PREPARING)
            and not group.in_initial_delay
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """End the join phase: drop members that did not rejoin, start the next generation and
        answer every parked JoinGroup (the leader gets the member list)."""
        group.cancel_join_timer()
        for member in group.members_not_rejoined():
            if member.group_instance_id is not None:
                continue  # KIP-345: a static member keeps its place until its session expires
            log.info("group %s: member %s did not rejoin in time", group.group_id, member.member_id)
            self._drop_member(group, member)
        group.elect_joined_leader()
        group.init_next_generation(self._scheduler.now_ms())
        if group.is_state(GroupState.EMPTY):
            self._persist_group_quietly(group)
            return
        for member in list(group.members.values()):
            member.answer_join(self._join_result(group, member))
            self._schedule_expiry(group, member, member.session_timeout_ms)
            member.is_new = False

    # -- SyncGroup ----------------------------------------------------------------------------

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: dict[str, bytes],
        respond: SyncCallback,
        *,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> None:
        """Park followers until the leader's assignment arrives, then answer everyone."""
        error = self._validate_group_status(group_id)
        if error == codes.COORDINATOR_LOAD_IN_PROGRESS:
            error = codes.REBALANCE_IN_PROGRESS  # the group reloads Empty: the member must rejoin
        group = self._groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if error:
            pass
        elif group is None:
            error = codes.UNKNOWN_MEMBER_ID
        elif group.is_state(GroupState.DEAD):
            error = codes.COORDINATOR_NOT_AVAILABLE
        elif membership_error := member_error(group, member_id, group_instance_id):
            error = membership_error
        elif generation_id != group.generation_id:
            error = codes.ILLEGAL_GENERATION
        elif (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            error = codes.INCONSISTENT_GROUP_PROTOCOL
        elif group.is_state(PREPARING):
            error = codes.REBALANCE_IN_PROGRESS
        if error or group is None or member is None:
            respond(SyncResult(error))
            return
        self._schedule_expiry(group, member, member.session_timeout_ms)
        if group.is_state(GroupState.STABLE):
            respond(self._sync_result(group, member))
            return
        member.answer_sync(SyncResult(codes.REBALANCE_IN_PROGRESS))  # superseded request
        member.sync_callback = respond
        if group.is_leader(member_id):
            self._complete_sync(group, assignments)

    def _complete_sync(self, group: ClassicGroup, assignments: dict[str, bytes]) -> None:
        full = {member_id: assignments.get(member_id, b"") for member_id in group.members}
        try:
            self._store.store_group(
                group.partition, group.group_id, self._metadata_record(group, full)
            )
        except (KafkaError, OSError) as exc:
            log.warning("group %s: storing the assignment failed: %s", group.group_id, exc)
            error = codes.storage_error_code(exc, group_metadata=True)
            self._reset_and_propagate_assignment_error(group, error)
            self._maybe_prepare_rebalance(group)
            return
        for member_id, assignment in full.items():
            group.members[member_id].assignment = assignment
        group.transition_to(GroupState.STABLE, self._scheduler.now_ms())
        for member in list(group.members.values()):
            if member.answer_sync(self._sync_result(group, member)):
                self._schedule_expiry(group, member, member.session_timeout_ms)

    def _sync_result(self, group: ClassicGroup, member: GroupMember) -> SyncResult:
        return SyncResult(codes.NONE, member.assignment, group.protocol_type, group.protocol_name)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: int) -> None:
        for member in list(group.members.values()):
            member.assignment = b""
            if member.answer_sync(SyncResult(error)):
                self._schedule_expiry(group, member, member.session_timeout_ms)

    # -- Heartbeat, LeaveGroup, expiry --------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
    ) -> int:
        error = self._validate_group_status(group_id)
        if error == codes.COORDINATOR_LOAD_IN_PROGRESS:
            return codes.NONE  # Kafka answers blindly; the next heartbeat after loading decides
        if error:
            return error
        group = self._groups.get(group_id)
        if group is None:
            return codes.UNKNOWN_MEMBER_ID
        if group.is_state(GroupState.DEAD):
            return codes.COORDINATOR_NOT_AVAILABLE
        error = member_error(group, member_id, group_instance_id)
        if error:
            return error
        member = group.members[member_id]
        if generation_id != group.generation_id:
            return codes.ILLEGAL_GENERATION
        self._schedule_expiry(group, member, member.session_timeout_ms)
        return codes.REBALANCE_IN_PROGRESS if group.is_state(PREPARING) else codes.NONE

    def leave_group(self, group_id: str, leaving: list[LeavingMember]) -> LeaveResult:
        """Remove members by member id, or (LeaveGroup v3+, an admin removing a static
        member) by group.instance.id alone with an empty member id."""
        error = self._validate_group_status(group_id)
        if error:
            return LeaveResult(error)
        group = self._groups.get(group_id)
        if group is None:
            return LeaveResult(codes.NONE, [codes.UNKNOWN_MEMBER_ID] * len(leaving))
        if group.is_state(GroupState.DEAD):
            return LeaveResult(codes.COORDINATOR_NOT_AVAILABLE)
        return LeaveResult(codes.NONE, [self._leave(group, entry) for entry in leaving])

    def _leave(self, group: ClassicGroup, leaving: LeavingMember) -> int:
        member_id, instance_id = leaving.member_id, leaving.group_instance_id
        if not member_id:
            member_id = group.static_member_id(instance_id) or ""
            instance_id = None  # resolved: the id holding the instance is the one to remove
        if member_id in group.pending_members and instance_id is None:
            group.pending_members.pop(member_id).cancel()
            self._try_complete_join(group)
            return codes.NONE
        error = member_error(group, member_id, instance_id)
        if error:
            return error
        self._remove_member_and_update_group(group, group.members[member_id])
        return codes.NONE

    def _schedule_expiry(self, group: ClassicGroup, member: GroupMember, timeout_ms: int) -> None:
        """(Re)start the member's session: it must heartbeat (or rejoin) before this fires."""
        member.cancel_expiry()
        member.expiry_timer = self._scheduler.call_later(
            timeout_ms, lambda: self._on_member_expired(group, member)
        )

    def _on_member_expired(self, group: ClassicGroup, member: GroupMember) -> None:
        member.expiry_timer = None
        if not self._is_current(group) or group.members.get(member.member_id) is not member:
            return
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            return  # the rebalance's own deadline covers members parked in it
        log.info("group %s: member %s session expired", group.group_id, member.member_id)
        self._remove_member_and_update_group(group, member)

    def _expire_pending_member(self, group: ClassicGroup, member_id: str) -> None:
        if self._is_current(group) and group.pending_members.pop(member_id, None) is not None:
            self._try_complete_join(group)

    def _drop_member(self, group: ClassicGroup, member: GroupMember) -> None:
        """Remove a member, answering whatever it is parked on so no response is lost."""
        member.answer_join(JoinResult(codes.UNKNOWN_MEMBER_ID, member_id=member.member_id))
        member.answer_sync(SyncResult(codes.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)

    def _remove_member_and_update_group(self, group: ClassicGroup, member: GroupMember) -> None:
        self._drop_member(group, member)
        if group.is_state(GroupState.STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group)
        elif group.is_state(PREPARING):
            self._try_complete_join(group)

    def _kill_group(self, group: ClassicGroup, error: int) -> None:
        group.cancel_join_timer()
        for timer in group.pending_members.values():
            timer.cancel()
        group.pending_members.clear()
        for member in group.members.values():
            member.cancel_expiry()
            member.answer_join(JoinResult(error, member_id=member.member_id))
            member.answer_sync(SyncResult(error))
        group.transition_to(GroupState.DEAD, self._scheduler.now_ms())
        del self._groups[group.group_id]

    # -- online migration (KIP-848) -----------------------------------------------------------

    def migration_snapshot(self, group_id: str) -> ClassicGroupState | None:
        """The group's members as a consumer group takes them over (None: no group of that
        id here, or it has no members)."""
        group = self._groups.get(group_id)
        if group is None or not group.members:
            return None
        protocol = group.protocol_name
        return ClassicGroupState(group_id, group.generation_id, group.protocol_type, tuple(
            ClassicMemberState(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms,
                # the chosen protocol first: its metadata is the subscription in force
                ClassicMetadata(m.session_timeout_ms, tuple(sorted(
                    m.protocols, key=lambda p: p[0] != protocol))),
                m.assignment)
            for m in group.members.values()))

    def hand_over(self, group_id: str) -> None:
        """The group became a consumer group: its members leave this coordinator (those
        waiting in a rebalance are told to rejoin, which reaches the consumer group); the
        emptied group stays to hold the offsets."""
        group = self._groups[group_id]
        group.cancel_join_timer()
        for timer in group.pending_members.values():
            timer.cancel()
        group.pending_members.clear()
        for member in list(group.members.values()):
            member.answer_join(JoinResult(codes.REBALANCE_IN_PROGRESS,
                                          member_id=member.member_id))
            member.answer_sync(SyncResult(codes.REBALANCE_IN_PROGRESS))
            group.remove(member.member_id)
        now = self._scheduler.now_ms()
        if not group.is_state(PREPARING):
            group.transition_to(PREPARING, now)
        group.transition_to(GroupState.EMPTY, now)
        group.protocol_name = None
        self._persist_group_quietly(group)

    def take_back(self, state: ClassicGroupState) -> None:
        """A consumer group downgraded to this protocol: its classic members come back with
        the partitions they own, and the group rebalances at once (the members learn it
        from their next heartbeat)."""
        group = self._groups.get(state.group_id) or self._create_group(state.group_id)
        group.generation_id = state.generation_id
        for m in state.members:
            member = GroupMember(
                member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.classic.session_timeout_ms,
                protocol_type=CONSUMER_PROTOCOL_TYPE, protocols=list(m.classic.protocols),
                assignment=m.assignment)
            group.add(member)
            self._schedule_expiry(group, member, member.session_timeout_ms)
        group.protocol_name = group.select_protocol()
        self._prepare_rebalance(group, initial_delay=False)
        self._persist_group_quietly(group)

    # -- offsets ------------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        offsets: dict[TopicPartition, OffsetCommitEntry],
        *,
        group_instance_id: str | None = None,
        retention_ms: int = -1,
    ) -> dict[TopicPartition, int]:
        """Validate the committer (generation fencing) and persist; an error code per partition."""

        def all_fail(error: int) -> dict[TopicPartition, int]:
            return dict.fromkeys(offsets, error)

        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error:
            return all_fail(error)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return all_fail(codes.ILLEGAL_GENERATION)  # a member of a generation now gone
            group = ClassicGroup(group_id, self.partition_for(group_id), self._scheduler.now_ms())
        error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if error:
            return all_fail(error)
        if group.is_state(COMPLETING):
            return all_fail(codes.REBALANCE_IN_PROGRESS)
        member = group.members.get(member_id)
        if member is not None:
            self._schedule_expiry(group, member, member.session_timeout_ms)  # counts as a heartbeat
        results = self._store_offsets(group, offsets, retention_ms)
        if group.offsets and group_id not in self._groups:
            self._groups[group_id] = group  # a standalone consumer's first commit
        return results

    @staticmethod
    def _validate_offset_commit(
        group: ClassicGroup, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """Kafka's fencing: only the current generation's members commit, except that a
        group nobody is a member of accepts "simple" commits (generation -1), whatever member
        id they carry: a consumer that generates its id itself (KIP-1082, librdkafka's
        ``group.protocol=consumer``) sends it before it ever joins."""
        if group.is_state(GroupState.DEAD):
            return codes.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_state(GroupState.EMPTY):
            return codes.NONE
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = member_error(group, member_id, group_instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return codes.ILLEGAL_GENERATION
            return codes.NONE
        if not group.is_state(GroupState.EMPTY):
            return codes.UNKNOWN_MEMBER_ID
        return codes.NONE

    def _store_offsets(
        self,
        group: ClassicGroup,
        offsets: dict[TopicPartition, OffsetCommitEntry],
        retention_ms: int,
    ) -> dict[TopicPartition, int]:
        now = self._scheduler.now_ms()
        results: dict[TopicPartition, int] = {}
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, entry in offsets.items():
            metadata = entry.metadata or ""
            if len(metadata) > self.config.offset_metadata_max_bytes:
                results[tp] = codes.OFFSET_METADATA_TOO_LARGE
                continue
            accepted[tp] = OffsetAndMetadata(
                offset=entry.offset,
                leader_epoch=entry.leader_epoch,
                metadata=metadata,
                commit_timestamp_ms=now,
                expire_timestamp_ms=None if retention_ms == -1 else now + retention_ms,
            )
        if accepted:
            try:
                self._store.store_offsets(group.partition, group.group_id, accepted)
            except (KafkaError, OSError) as exc:
                log.warning("group %s: storing offsets failed: %s", group.group_id, exc)
                results.update(dict.fromkeys(accepted, codes.storage_error_code(exc)))
            else:
                group.offsets.update(accepted)
                results.update(dict.fromkeys(accepted, codes.NONE))
        return {tp: results[tp] for tp in offsets}

    def validate_transactional_commit(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """TxnOffsetCommit's group checks (see :mod:`kafkalite_server.group.txn_offsets`)."""
        error = self._validate_group_status(group_id)
        if error:
            return error
        group = self._groups.get(group_id)
        if group is None or (generation_id < 0 and not member_id and group_instance_id is None):
            return codes.NONE
        return self._validate_offset_commit(group, generation_id, member_id, group_instance_id)

    def apply_transactional_offsets(
        self, group_id: str, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> None:
        """A transaction holding these offsets committed."""
        group = self._groups.get(group_id)
        if group is None:
            if not self.ownership.owns(group_id):
                return
            group = self._create_group(group_id)
        group.offsets.update(offsets)

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> OffsetFetchResult:
        """Committed offsets for ``partitions``, or every committed partition when None."""
        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error:
            return OffsetFetchResult(error, dict.fromkeys(partitions or []))
        group = self._groups.get(group_id)
        committed = group.offsets if group is not None else {}
        if partitions is None:
            return OffsetFetchResult(codes.NONE, dict(committed))
        return OffsetFetchResult(codes.NONE, {tp: committed.get(tp) for tp in partitions})

    def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> OffsetDeleteResult:
        """OffsetDelete (KIP-496): forget committed offsets, except of topics an active member
        is subscribed to (GROUP_SUBSCRIBED_TO_TOPIC): those would be re-committed anyway."""
        error = self._validate_group_status(group_id)
        if error:
            return OffsetDeleteResult(error)
        group = self._groups.get(group_id)
        if group is None or group.is_state(GroupState.DEAD):
            return OffsetDeleteResult(codes.GROUP_ID_NOT_FOUND)
        if group.is_state(GroupState.EMPTY):
            subscribed: set[str] = set()
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            # Unknown subscriptions (not yet chosen, unreadable) protect every topic.
            known = group.subscribed_topics()
            subscribed = known if known is not None else {tp.topic for tp in partitions}
        else:
            return OffsetDeleteResult(codes.NON_EMPTY_GROUP)
        results = {
            tp: codes.GROUP_SUBSCRIBED_TO_TOPIC if tp.topic in subscribed else codes.NONE
            for tp in partitions
        }
        eligible = [tp for tp, code in results.items() if code == codes.NONE]
        removed = [tp for tp in eligible if tp in group.offsets]
        if removed:
            try:
                self._remove_offsets(group, removed,
                                     self._pending_transactional_offsets().get(group_id, frozenset()))
            except (KafkaError, OSError) as exc:
                log.warning("group %s: deleting offsets failed: %s", group_id, exc)
                results.update(dict.fromkeys(eligible, codes.storage_error_code(exc)))
        return OffsetDeleteResult(codes.NONE, results)

    def _remove_offsets(self, group: ClassicGroup, partitions: list[TopicPartition],
                        pending: AbstractSet[TopicPartition]) -> None:
        """Tombstone the offsets of ``partitions``. An Empty group left with no offsets, and
        none ``pending`` in a transaction, is gone: its metadata gets a tombstone in the same
        batch and it turns Dead. Raises the store's error, changing nothing."""
        goes_dead = (group.is_state(GroupState.EMPTY) and set(group.offsets) <= set(partitions)
                     and not pending)
        if goes_dead:
            self._store.delete_group(group.partition, group.group_id, partitions)
        else:
            self._store.delete_offsets(group.partition, group.group_id, partitions)
        for tp in partitions:
            group.offsets.pop(tp, None)
        if goes_dead:
            self._kill_group(group, codes.COORDINATOR_NOT_AVAILABLE)

    # -- offset expiry ------------------------------------------------------------------------

    def _schedule_offset_expiry(self) -> None:
        if self._expiry_timer is None:
            self._expiry_timer = self._scheduler.call_later(
                self.config.offsets_retention_check_interval_ms, self._on_expiry_check
            )

    def _on_expiry_check(self) -> None:
        self._expiry_timer = None
        self.remove_expired_offsets()
        if self.ownership.partitions:
            self._schedule_offset_expiry()

    def remove_expired_offsets(self) -> int:
        """One retention pass (Kafka's cleanupGroupMetadata): tombstone every offset whose
        retention ran out (see :mod:`.expiry`), and delete Empty groups left without offsets.
        Offsets with a transactional commit pending keep their partition's committed offset,
        and their group (Kafka keeps a group while it has any). Returns how many offsets
        went; a failed write is logged and retried next pass."""
        now = self._scheduler.now_ms()
        pending = self._pending_transactional_offsets()
        active = self._active_groups()
        removed = 0
        for group in list(self._groups.values()):
            if not self.ownership.is_owned(group.partition) or group.group_id in active:
                continue
            held = pending.get(group.group_id, frozenset())
            expired = expired_offsets(group, now, self.config.offsets_retention_ms, held)
            if not expired and not (group.is_state(GroupState.EMPTY) and not group.offsets
                                    and not held):
                continue
            try:
                self._remove_offsets(group, expired, held)
            except (KafkaError, OSError) as exc:
                log.warning("group %s: removing expired offsets failed: %s", group.group_id, exc)
                continue
            removed += len(expired)
            if expired:
                log.info("group %s: %d offsets expired", group.group_id, len(expired))
        return removed

    def remove_offsets_of_deleted_topics(self, deleted: Callable[[str], bool],
                                         partition: int | None = None) -> int:
        """Kafka's handleDeletedPartitions: tombstone every owned group's offsets on topics
        ``deleted`` says are gone (of the groups of ``partition`` only, if given), so a
        topic created again under the same name is read from the start, not from offsets
        of its predecessor. An Empty group left with no offsets is deleted, as retention
        deletes it. Returns how many offsets went; a failed write is logged."""
        pending = self._pending_transactional_offsets()
        removed = 0
        for group in list(self._groups.values()):
            if (not self.ownership.is_owned(group.partition)
                    or partition not in (None, group.partition)):
                continue
            gone = [tp for tp in group.offsets if deleted(tp.topic)]
            if not gone:
                continue
            try:
                self._remove_offsets(group, gone, pending.get(group.group_id, frozenset()))
            except (KafkaError, OSError) as exc:
                log.warning("group %s: removing offsets of deleted topics failed: %s",
                            group.group_id, exc)
                continue
            removed += len(gone)
            log.info("group %s: removed the offsets of %d partitions of deleted topics",
                     group.group_id, len(gone))
        return removed

    # -- admin: DescribeGroups, ListGroups, DeleteGroups -------------------------------------

    def describe_groups(self, group_ids: list[str]) -> list[GroupDescription]:
        return [self._describe(group_id) for group_id in group_ids]

    def _describe(self, group_id: str) -> GroupDescription:
        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error:
            return GroupDescription(error, group_id, "", "", "")
        group = self._groups.get(group_id)
        if group is None:
            return GroupDescription(codes.NONE, group_id, GroupState.DEAD.value, "", "")
        # Only a Stable group has metadata and assignments that belong together (Kafka's rule).
        protocol = group.protocol_name if group.is_state(GroupState.STABLE) else None
        members = [
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata_for(protocol) if protocol else b"",
                assignment=m.assignment if protocol else b"",
            )
            for m in group.members.values()
        ]
        return GroupDescription(
            codes.NONE,
            group_id,
            group.state.value,
            group.protocol_type or "",
            protocol or "",
            members,
        )

    def list_groups(self) -> tuple[int, list[GroupListing]]:
        """Every group this coordinator owns; LOAD_IN_PROGRESS flags a partial answer."""
        error = codes.COORDINATOR_LOAD_IN_PROGRESS if self.ownership.loading else codes.NONE
        listings = [
            GroupListing(g.group_id, g.protocol_type or "", g.state.value)
            for g in self._groups.values()
        ]
        return error, listings

    def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        return {group_id: self._delete(group_id) for group_id in group_ids}

    def _delete(self, group_id: str) -> int:
        error = self._validate_group_status(group_id, allow_empty_id=True)
        if error:
            return error
        group = self._groups.get(group_id)
        if group is None or group.is_state(GroupState.DEAD):
            return codes.GROUP_ID_NOT_FOUND
        if not group.is_state(GroupState.EMPTY):
            return codes.NON_EMPTY_GROUP
        try:
            self._store.delete_group(group.partition, group_id, list(group.offsets))
        except (KafkaError, OSError) as exc:
            return codes.storage_error_code(exc)
        self._kill_group(group, codes.COORDINATOR_NOT_AVAILABLE)
        return codes.NONE

    # -- persistence helpers ------------------------------------------------------------------

    def _metadata_record(
        self, group: ClassicGroup, assignments: dict[str, bytes]
    ) -> GroupMetadataRecord:
        protocol = group.protocol_name
        members = [
            MemberRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata_for(protocol) if protocol else b"",
                assignment=assignments.get(m.member_id, m.assignment),
            )
            for m in group.members.values()
        ]
        return GroupMetadataRecord(
            protocol_type=group.protocol_type or "",
            generation_id=group.generation_id,
            protocol_name=protocol,
            leader_id=group.leader_id,
            state_timestamp_ms=group.state_timestamp_ms,
            members=members,
        )

    def _persist_group_quietly(self, group: ClassicGroup) -> None:
        """Write an emptied group's generation; nobody waits on it, so a failure is only logged."""
        try:
            self._store.store_group(
                group.partition, group.group_id, self._metadata_record(group, {})
            )
        except (KafkaError, OSError) as exc:
            log.warning("group %s: storing its empty state failed: %s", group.group_id, exc)
